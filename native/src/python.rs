//! The PyO3 binding. Only `klogtool/formats/engine.py` imports it.
//!
//! Every entry point returns `None` where the Python engine must read a batch itself (see
//! `batch`); nothing here raises a format error. A Rust panic surfaces as PyO3's
//! `PanicException`, which klogtool reports as an internal error (exit 70) naming the file.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyNone, PyString, PyTuple};

use crate::batch::{self, Sink};
use crate::columns;
use crate::compact;
use crate::encode;
use crate::guard;
use crate::legacy;
use crate::render;
use crate::scan;

/// A read-only view of a Python buffer (bytes, a memoryview of an mmap) for one call.
struct Bytes {
    buffer: PyUntypedBuffer,
}

impl Bytes {
    fn get(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let buffer = PyUntypedBuffer::get(obj)?;
        if !buffer.is_c_contiguous() || buffer.item_size() != 1 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "expected a contiguous byte buffer",
            ));
        }
        Ok(Bytes { buffer })
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: the buffer is C-contiguous bytes (checked in `get`) and stays exported (so
        // the memory stays mapped) while `self.buffer` lives, which outlives the slice.
        // klogtool passes read-only buffers (bytes, read-only mmaps), so nothing writes to
        // them while they are read. One of the crate's two `unsafe` blocks (the other is
        // `Buffer::__getbuffer__`): the hand-off of Python's memory to Rust, which PyO3
        // cannot express safely.
        unsafe {
            std::slice::from_raw_parts(self.buffer.buf_ptr() as *const u8, self.buffer.len_bytes())
        }
    }
}

/// CRC-32C (Castagnoli) of a buffer, with the CPU's CRC instructions where it has them.
#[pyfunction]
#[pyo3(name = "crc32c")]
fn crc32c_of(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u32> {
    let bytes = Bytes::get(data)?;
    let data = bytes.as_slice();
    // Releasing the GIL costs more than a small CRC.
    Ok(if data.len() < 1 << 16 {
        crc32c::crc32c(data)
    } else {
        py.detach(|| crc32c::crc32c(data))
    })
}

/// `(positions and CRC-32Cs of the v2 batches from `start` on, where the walk stopped)`: see
/// `scan::crc_ahead`. For a background thread: the GIL is released while it runs.
#[pyfunction]
fn crc_ahead(
    py: Python<'_>,
    buf: &Bound<'_, PyAny>,
    start: usize,
    limit: usize,
) -> PyResult<(Vec<(usize, u32)>, usize)> {
    let bytes = Bytes::get(buf)?;
    let data = bytes.as_slice();
    Ok(py.detach(|| scan::crc_ahead(data, start, limit)))
}

/// `(records, offsets in order and inside the batch's range, largest record timestamp)` for
/// a well-formed v2 batch (`batch` is the whole batch), or None.
#[pyfunction]
fn check_v2(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    max_batch_bytes: usize,
) -> PyResult<Option<(usize, bool, i64)>> {
    let bytes = Bytes::get(batch)?;
    let data = bytes.as_slice();
    Ok(py.detach(|| columns::check(data, max_batch_bytes)))
}

/// Python tuples `(offset, timestamp, key, value, headers, sequence, attributes)` of records,
/// and for v0/v1 records `crc, crc_valid` after them.
struct Rows<'py> {
    py: Python<'py>,
    rows: Vec<Bound<'py, PyTuple>>,
    error: Option<PyErr>,
}

impl<'py> Rows<'py> {
    fn optional(&self, v: Option<&[u8]>) -> Bound<'py, PyAny> {
        match v {
            Some(b) => PyBytes::new(self.py, b).into_any(),
            None => PyNone::get(self.py).to_owned().into_any(),
        }
    }

    fn row(&self, r: &batch::Record<'_>) -> PyResult<Bound<'py, PyTuple>> {
        let py = self.py;
        let headers = r
            .headers
            .iter()
            .map(|(k, v)| PyTuple::new(py, [PyString::new(py, k).into_any(), self.optional(*v)]))
            .collect::<PyResult<Vec<_>>>()?;
        let [offset, timestamp, key, value, headers, sequence] = [
            r.offset.into_pyobject(py)?.into_any(),
            r.timestamp.into_pyobject(py)?.into_any(),
            self.optional(r.key),
            self.optional(r.value),
            PyTuple::new(py, headers)?.into_any(),
            r.sequence.into_pyobject(py)?.into_any(),
        ];
        let Some((crc, valid)) = r.crc else {
            let attributes = r.attributes.into_pyobject(py)?.into_any();
            return PyTuple::new(
                py,
                [offset, timestamp, key, value, headers, sequence, attributes],
            );
        };
        // a v0/v1 message's attributes are a signed byte, as Python unpacks them
        let attributes = (r.attributes as i8).into_pyobject(py)?.into_any();
        let crc = crc.into_pyobject(py)?.into_any();
        let valid = PyBool::new(py, valid).to_owned().into_any();
        PyTuple::new(
            py,
            [
                offset, timestamp, key, value, headers, sequence, attributes, crc, valid,
            ],
        )
    }
}

impl Sink for Rows<'_> {
    fn record(&mut self, r: &batch::Record<'_>) {
        if self.error.is_some() {
            return;
        }
        match self.row(r) {
            Ok(row) => self.rows.push(row),
            Err(e) => self.error = Some(e),
        }
    }
}

/// The most records `records_v2` returns as one list.
const MAX_LISTED_RECORDS: i32 = 4096;

/// The records of a whole v2 batch as `(offset, timestamp, key, value, headers, sequence,
/// attributes)` tuples (payloads as bytes), or None: decode it in Python.
#[pyfunction]
fn records_v2<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    max_batch_bytes: usize,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let bytes = Bytes::get(batch)?;
    // A list holds the whole batch: past this many records the Python decoder, which yields
    // them a chunk at a time, keeps memory bounded instead.
    match batch::parse_header(bytes.as_slice()) {
        Some(h) if (0..=MAX_LISTED_RECORDS).contains(&h.records_count) => {}
        _ => return Ok(None),
    }
    let mut rows = Rows {
        py,
        rows: Vec::new(),
        error: None,
    };
    // Python objects are made as the records decode: the GIL stays held.
    if batch::decode(bytes.as_slice(), max_batch_bytes, &mut rows).is_none() {
        return Ok(None);
    }
    if let Some(e) = rows.error {
        return Err(e);
    }
    Ok(Some(PyList::new(py, rows.rows)?))
}

/// `(count, first offset, last offset)` of a v0/v1 wrapper's decompressed inner set, or None:
/// walk it in Python (see `legacy::scan`).
#[pyfunction]
fn legacy_scan(
    py: Python<'_>,
    raw: &Bound<'_, PyAny>,
    magic: u8,
) -> PyResult<Option<(usize, i64, i64)>> {
    let bytes = Bytes::get(raw)?;
    let data = bytes.as_slice();
    Ok(py.detach(|| legacy::scan(data, magic)))
}

fn wrapper(magic: u8, shift: i64, fixed_timestamp: Option<i64>) -> legacy::Wrapper {
    legacy::Wrapper {
        magic,
        shift,
        fixed_timestamp,
    }
}

/// The records of a v0/v1 wrapper's decompressed inner set as `records_v2`'s tuples followed
/// by `crc, crc_valid`, or None: read it in Python. The caller bounds the number of records.
#[pyfunction]
fn records_legacy<'py>(
    py: Python<'py>,
    raw: &Bound<'py, PyAny>,
    magic: u8,
    shift: i64,
    fixed_timestamp: Option<i64>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let bytes = Bytes::get(raw)?;
    let mut rows = Rows {
        py,
        rows: Vec::new(),
        error: None,
    };
    let w = wrapper(magic, shift, fixed_timestamp);
    if legacy::decode(bytes.as_slice(), &w, &mut rows).is_none() {
        return Ok(None);
    }
    if let Some(e) = rows.error {
        return Err(e);
    }
    Ok(Some(PyList::new(py, rows.rows)?))
}

/// What `reencode_v2` returns: the records area, the number of records, their largest
/// timestamp and the base timestamp of their deltas.
type Reencoded<'py> = (Bound<'py, PyBytes>, usize, Option<i64>, Option<i64>);

/// `(records area, records, largest timestamp, base timestamp)` of a whole v2 batch
/// re-encoded (see `encode::reencode`; `keep`: one byte per record, 0 drops it), or None:
/// re-encode it in Python.
#[pyfunction]
#[pyo3(signature = (batch, max_batch_bytes, keep, base_offset, base_timestamp))]
fn reencode_v2<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    max_batch_bytes: usize,
    keep: Option<&Bound<'py, PyAny>>,
    base_offset: i64,
    base_timestamp: Option<i64>,
) -> PyResult<Option<Reencoded<'py>>> {
    let bytes = Bytes::get(batch)?;
    let mask = keep.map(Bytes::get).transpose()?;
    let data = bytes.as_slice();
    let mask = mask.as_ref().map(Bytes::as_slice);
    let done =
        py.detach(|| encode::reencode(data, max_batch_bytes, mask, base_offset, base_timestamp));
    Ok(done.map(|d| {
        (
            PyBytes::new(py, &d.area),
            d.count,
            d.max_timestamp,
            d.base_timestamp,
        )
    }))
}

/// What `render_records` returns: the lines, the number of records, their first and last
/// offsets, and the `(previous, next)` record offsets that are not consecutive (kafka only).
type Rendered<'py> = (
    Bound<'py, Buffer>,
    usize,
    Option<i64>,
    Option<i64>,
    Vec<(i64, i64)>,
);

/// `dump-segments` lines (`format`: "jsonl", "text" or "kafka") of every record of a whole v2
/// batch, or with `inner` (`(magic, shift, fixed timestamp)`) of a v0/v1 wrapper's
/// decompressed inner set; or None: render them in Python.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (batch, max_batch_bytes, position, print_data, key_decoder, value_decoder, format, inner=None))]
fn render_records<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    max_batch_bytes: usize,
    position: i64,
    print_data: bool,
    key_decoder: &str,
    value_decoder: &str,
    format: &str,
    inner: Option<(u8, i64, Option<i64>)>,
) -> PyResult<Option<Rendered<'py>>> {
    // Without --print-data the decoders show nothing.
    let parse = |name| match print_data {
        true => render::Payload::parse(name),
        false => Some(render::Payload::Omit),
    };
    let (Some(key), Some(value)) = (parse(key_decoder), parse(value_decoder)) else {
        return Ok(None);
    };
    if !matches!(format, "jsonl" | "text" | "kafka") {
        return Ok(None);
    }
    let bytes = Bytes::get(batch)?;
    let source = match inner {
        None => render::Source::V2(bytes.as_slice()),
        Some((magic, shift, fixed)) => {
            render::Source::Legacy(bytes.as_slice(), wrapper(magic, shift, fixed))
        }
    };
    let out = |n| RENDERED.get(n);
    let rendered = py.detach(|| {
        let lines = match format {
            "kafka" => render::kafka(source, max_batch_bytes, &out, print_data, key, value)
                .map(|k| (k.out, k.records, k.first, k.last, k.breaks)),
            "text" => render::text(source, max_batch_bytes, &out, print_data, key, value)
                .map(|(out, n)| (out, n, None, None, Vec::new())),
            _ => render::jsonl(
                source,
                max_batch_bytes,
                &out,
                position,
                print_data,
                key,
                value,
            )
            .map(|(out, n)| (out, n, None, None, Vec::new())),
        };
        // UTF-8 by construction (made of valid UTF-8 strings); checked all the same
        lines.filter(|l| std::str::from_utf8(&l.0).is_ok())
    });
    let Some((out, n, first, last, breaks)) = rendered else {
        return Ok(None);
    };
    // Handed over as UTF-8 bytes without a copy (the caller writes them as they are); the
    // memory comes back for later batches when Python drops it.
    let out = Bound::new(
        py,
        Buffer {
            data: Column::Bytes(out),
            spares: Some(RENDERED.clone()),
        },
    )?;
    Ok(Some((out, n, first, last, breaks)))
}

/// Rendered lines' buffers that Python has written, for later batches: with `dump-segments
/// --jobs` about a hundred are in flight at once (the threads' tasks: 2 MiB of batches each).
static RENDERED: std::sync::LazyLock<columns::Spares> =
    std::sync::LazyLock::new(|| columns::Spares::new(256, 4 << 20));

/// Record columns of many v2 batches, in Arrow's layout.
#[pyclass(module = "klogtool._native")]
struct Columns {
    inner: columns::Columns,
}

#[pymethods]
impl Columns {
    #[new]
    fn new(max_batch_bytes: usize) -> Self {
        Columns {
            inner: columns::Columns::new(max_batch_bytes),
        }
    }

    /// Append records `skip .. skip + limit` of a v2 batch as batch number `index`: (rows
    /// appended, records in the batch), or None (nothing appended) when the Python engine
    /// must read this batch.
    fn add(
        &mut self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
        index: i32,
        skip: usize,
        limit: usize,
    ) -> PyResult<Option<(usize, usize)>> {
        let bytes = Bytes::get(batch)?;
        let data = bytes.as_slice();
        let inner = &mut self.inner;
        Ok(py.detach(|| inner.add(data, index, (skip, limit))))
    }

    /// As `add`, for a v0/v1 wrapper's decompressed inner set (None also when a record's CRC
    /// fails).
    #[allow(clippy::too_many_arguments)]
    fn add_legacy(
        &mut self,
        py: Python<'_>,
        raw: &Bound<'_, PyAny>,
        magic: u8,
        shift: i64,
        fixed_timestamp: Option<i64>,
        index: i32,
        skip: usize,
        limit: usize,
    ) -> PyResult<Option<(usize, usize)>> {
        let bytes = Bytes::get(raw)?;
        let data = bytes.as_slice();
        let w = wrapper(magic, shift, fixed_timestamp);
        let inner = &mut self.inner;
        Ok(py.detach(|| inner.add_legacy(data, &w, index, (skip, limit))))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    #[getter]
    fn payload_bytes(&self) -> usize {
        self.inner.payload_bytes()
    }

    /// The buffers (as `Buffer`s, moved out whole) and null counts, leaving the builder
    /// empty.
    fn take<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.take();
        let d = PyDict::new(py);
        d.set_item("length", c.len())?;
        d.set_item("offset", Buffer::new(py, c.offsets)?)?;
        d.set_item("timestamp", Buffer::new(py, c.timestamps)?)?;
        d.set_item("sequence", Buffer::new(py, c.sequences)?)?;
        d.set_item("batch_index", Buffer::new(py, c.batch_index)?)?;
        for ((name, col), spares) in [
            ("key", c.keys),
            ("value", c.values),
            ("header_key", c.header_keys),
            ("header_value", c.header_values),
        ]
        .into_iter()
        .zip(c.spares)
        {
            d.set_item(format!("{name}_nulls"), col.validity.nulls)?;
            d.set_item(format!("{name}_length"), col.len())?;
            d.set_item(
                format!("{name}_validity"),
                Buffer::new(py, col.validity.bytes)?,
            )?;
            d.set_item(format!("{name}_offsets"), Buffer::new(py, col.offsets)?)?;
            let data = Buffer {
                data: Column::Bytes(col.data),
                spares: Some(spares),
            };
            d.set_item(format!("{name}_data"), Bound::new(py, data)?)?;
        }
        d.set_item("headers_nulls", c.header_validity.nulls)?;
        d.set_item(
            "headers_validity",
            Buffer::new(py, c.header_validity.bytes)?,
        )?;
        d.set_item("headers_offsets", Buffer::new(py, c.header_offsets)?)?;
        Ok(d)
    }
}

/// A column's memory handed to Python without a copy: Arrow wraps it
/// (`pyarrow.py_buffer`) through the buffer protocol, read-only, and it lives as long as any
/// view of it. Never changed after it is made (a frozen class with no methods that write).
#[pyclass(module = "klogtool._native", frozen)]
struct Buffer {
    data: Column,
    /// Where the memory goes back to when Python drops the buffer (see `columns::Spares`).
    spares: Option<columns::Spares>,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let (Column::Bytes(data), Some(spares)) = (&mut self.data, &self.spares) {
            spares.give(std::mem::take(data));
        }
    }
}

enum Column {
    Bytes(Vec<u8>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
}

impl From<Vec<u8>> for Column {
    fn from(v: Vec<u8>) -> Self {
        Column::Bytes(v)
    }
}

impl From<Vec<i32>> for Column {
    fn from(v: Vec<i32>) -> Self {
        Column::Int32(v)
    }
}

impl From<Vec<i64>> for Column {
    fn from(v: Vec<i64>) -> Self {
        Column::Int64(v)
    }
}

impl Buffer {
    fn new<T>(py: Python<'_>, data: Vec<T>) -> PyResult<Bound<'_, Buffer>>
    where
        Vec<T>: Into<Column>,
    {
        Bound::new(
            py,
            Buffer {
                data: data.into(),
                spares: None,
            },
        )
    }

    fn as_bytes(&self) -> &[u8] {
        match &self.data {
            Column::Bytes(v) => v,
            Column::Int32(v) => bytemuck::cast_slice(v),
            Column::Int64(v) => bytemuck::cast_slice(v),
        }
    }
}

#[pymethods]
impl Buffer {
    fn __len__(&self) -> usize {
        self.as_bytes().len()
    }

    /// The buffer protocol's export, read-only.
    ///
    /// # Safety
    /// Called by CPython with a `Py_buffer` to fill (PyO3 requires `unsafe` here).
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        let data = slf.get().as_bytes();
        // SAFETY: `view` is CPython's to fill; `PyBuffer_FillInfo` takes a reference to
        // `slf`, so the Vec behind `data` (never changed: the class is frozen and has no
        // method that writes) outlives every view of it; `readonly` = 1 refuses writers.
        let filled = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                data.as_ptr() as *mut std::ffi::c_void,
                data.len() as pyo3::ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if filled == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}

/// The log cleaner's offset map (key digest -> last offset), with the decisions that read it.
/// It behaves as the `dict` the Python cleaner uses (`len`, `map[digest] = offset`,
/// `map.get(digest, default)`), so a batch the native engine hands back updates it too.
#[pyclass(module = "klogtool._native")]
struct OffsetMap {
    inner: compact::OffsetMap,
}

fn digest_of(key: &[u8]) -> PyResult<compact::Key> {
    key.try_into()
        .map_err(|_| pyo3::exceptions::PyValueError::new_err("a key digest is 16 bytes"))
}

/// `(keep, keyless, superseded, tombstones expired, tombstones kept)`: see `retain`.
type Retained<'py> = (Bound<'py, PyBytes>, usize, usize, usize, usize);

#[pymethods]
impl OffsetMap {
    #[new]
    fn new() -> Self {
        OffsetMap {
            inner: compact::OffsetMap::default(),
        }
    }

    fn __len__(&self) -> usize {
        self.inner.map.len()
    }

    fn __setitem__(&mut self, key: &[u8], offset: i64) -> PyResult<()> {
        self.inner.map.insert(digest_of(key)?, offset);
        Ok(())
    }

    fn get(&self, key: &[u8], default: i64) -> PyResult<i64> {
        Ok(self
            .inner
            .map
            .get(&digest_of(key)?)
            .copied()
            .unwrap_or(default))
    }

    /// Put the keyed records of a whole v2 batch from `first_dirty` on while the map holds
    /// fewer than `capacity` keys: `(full, offset of the last record put)`, or None (nothing
    /// put): the Python cleaner reads this batch.
    fn add(
        &mut self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
        max_batch_bytes: usize,
        first_dirty: i64,
        capacity: usize,
    ) -> PyResult<Option<(bool, Option<i64>)>> {
        let bytes = Bytes::get(batch)?;
        let data = bytes.as_slice();
        let inner = &mut self.inner;
        let added = py.detach(|| inner.add(data, max_batch_bytes, first_dirty, capacity));
        Ok(added.map(|a| (a.full, a.latest)))
    }

    /// Which records of a whole v2 data batch the cleaner keeps, one byte each, and the
    /// counts of keyless, superseded and expired-tombstone records dropped and of tombstones
    /// kept; None: the Python cleaner decides.
    fn retain<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
        max_batch_bytes: usize,
        latest_offset: i64,
        keep_tombstones: bool,
    ) -> PyResult<Option<Retained<'py>>> {
        let bytes = Bytes::get(batch)?;
        let data = bytes.as_slice();
        let inner = &self.inner;
        let done =
            py.detach(|| inner.retain(data, max_batch_bytes, latest_offset, keep_tombstones));
        Ok(done.map(|d| {
            (
                PyBytes::new(py, &d.keep),
                d.keyless,
                d.superseded,
                d.tombstones_expired,
                d.tombstones_kept,
            )
        }))
    }
}

/// Remember that `view` (a read-only mapping) holds the file `path`, so that a SIGBUS
/// there (the file shrank under the read) is one line naming it and exit status 3
/// (`guard`): a slot for `unwatch_mapping`, or None (not watched).
#[pyfunction]
fn watch_mapping(view: &Bound<'_, PyAny>, path: &str) -> PyResult<Option<usize>> {
    let bytes = Bytes::get(view)?;
    let data = bytes.as_slice();
    if !guard::install() {
        return Ok(None);
    }
    Ok(guard::watch(
        data.as_ptr() as usize,
        data.len(),
        path.as_bytes(),
    ))
}

/// Forget a mapping `watch_mapping` remembered.
#[pyfunction]
fn unwatch_mapping(slot: usize) {
    guard::unwatch(slot);
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_v2, m)?)?;
    m.add_function(wrap_pyfunction!(watch_mapping, m)?)?;
    m.add_function(wrap_pyfunction!(unwatch_mapping, m)?)?;
    m.add_function(wrap_pyfunction!(crc32c_of, m)?)?;
    m.add_function(wrap_pyfunction!(crc_ahead, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_scan, m)?)?;
    m.add_function(wrap_pyfunction!(records_legacy, m)?)?;
    m.add_function(wrap_pyfunction!(records_v2, m)?)?;
    m.add_function(wrap_pyfunction!(render_records, m)?)?;
    m.add_function(wrap_pyfunction!(reencode_v2, m)?)?;
    m.add_class::<Columns>()?;
    m.add_class::<Buffer>()?;
    m.add_class::<OffsetMap>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
