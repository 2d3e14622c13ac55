//! The PyO3 binding: the module `klogtool._native`. Only `klogtool/formats/engine.py` imports
//! it; the adapters outside the format layer reach it through that module's `native_module()`:
//! `klogtool/log/rewrite/native_clean.py` (`clean`), `klogtool/log/read/native_render.py`
//! (`render`), `klogtool/log/read/native_stats.py` (`stats`) and
//! `klogtool/log/export/native_columns.py` (`columns`); `find` is reached
//! through `engine.py` itself. Its types are described for mypy in `klogtool/_native.pyi`.
//!
//! Every entry point returns `None` where the Python engine must read a batch itself (see
//! `batch`); nothing here raises a format error. A Rust panic surfaces as PyO3's
//! `PanicException`, which klogtool reports as an internal error (exit 70) naming the file.
//!
//! This file holds the format kernels' entry points (CRC, check, records, legacy, re-encode,
//! the mapping guard) and the module itself; `clean` the cleaner's offset map, `find` find's
//! record filters, `stats` stats' per-record aggregates, `render` the dump-segments lines,
//! `columns` export's record columns and the `Buffer` that hands memory to Python, `record`
//! the `Record` class that the records entry points make (`klogtool/formats/batch.py` takes
//! it from `engine.py` as its `Record`), `records` the iterator `records_v2` returns.

mod clean;
mod columns;
mod find;
mod record;
mod records;
mod render;
mod stats;

use std::fs::File;
use std::path::PathBuf;

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList, PyNone, PyString, PyTuple};

use crate::batch::{self, Sink};
use crate::columns as column_kernel;
use crate::encode;
use crate::guard;
use crate::handback;
use crate::legacy;
use crate::scan;

/// A read-only view of a Python buffer (bytes, a memoryview of an mmap) for one call, or for
/// as long as `records_v2`'s iterator lives (the buffer stays exported meanwhile).
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
        // `Buffer::__getbuffer__`, in `columns`): the hand-off of Python's memory to Rust,
        // which PyO3 cannot express safely.
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

/// `(pos, last, cut)`: the walk that cuts a large segment's part from `start` at a batch
/// boundary, see `scan::chunk_cut`. The GIL is released while it runs.
#[pyfunction]
fn chunk_cut(
    py: Python<'_>,
    buf: &Bound<'_, PyAny>,
    start: usize,
    chunk_bytes: usize,
    last: Option<i128>,
) -> PyResult<(usize, Option<i128>, bool)> {
    let bytes = Bytes::get(buf)?;
    let data = bytes.as_slice();
    Ok(py.detach(|| scan::chunk_cut(data, start, chunk_bytes, last)))
}

/// `chunk_cut` over the first `size` bytes of the file at `path`, its headers read with
/// `pread` (no pages mapped), see `scan::chunk_cut_file`. An I/O error is an `OSError` with
/// its errno (the caller names the file).
#[pyfunction]
fn chunk_cut_file(
    py: Python<'_>,
    path: PathBuf,
    size: usize,
    start: usize,
    chunk_bytes: usize,
    last: Option<i128>,
) -> PyResult<(usize, Option<i128>, bool)> {
    py.detach(|| {
        let file = File::open(&path)?;
        scan::chunk_cut_file(&file, size, start, chunk_bytes, last)
    })
    .map_err(|e| PyOSError::new_err((e.raw_os_error().unwrap_or(0), e.to_string())))
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
    Ok(py.detach(|| {
        handback::kernel(handback::Kernel::Check, data, || {
            column_kernel::check(data, max_batch_bytes)
        })
    }))
}

/// `Record`s of decoded records (`record`): v2 records with `crc, crc_valid` None, v0/v1
/// records with their message's CRC-32 and whether it holds.
struct Rows<'py> {
    py: Python<'py>,
    rows: Vec<Bound<'py, record::Record>>,
    error: Option<PyErr>,
}

impl<'py> Rows<'py> {
    fn optional(&self, v: Option<&[u8]>) -> Bound<'py, PyAny> {
        match v {
            Some(b) => PyBytes::new(self.py, b).into_any(),
            None => PyNone::get(self.py).to_owned().into_any(),
        }
    }

    fn row(&self, r: &batch::Record<'_>) -> PyResult<Bound<'py, record::Record>> {
        let py = self.py;
        let headers = r
            .headers
            .iter()
            .map(|(k, v)| PyTuple::new(py, [PyString::new(py, k).into_any(), self.optional(*v)]))
            .collect::<PyResult<Vec<_>>>()?;
        let none = || PyNone::get(py).to_owned().into_any();
        let (attributes, crc, valid) = match r.crc {
            None => (r.attributes.into_pyobject(py)?.into_any(), none(), none()),
            // a v0/v1 message's attributes are a signed byte, as Python unpacks them
            Some((crc, valid)) => (
                (r.attributes as i8).into_pyobject(py)?.into_any(),
                crc.into_pyobject(py)?.into_any(),
                PyBool::new(py, valid).to_owned().into_any(),
            ),
        };
        let fields = [
            r.offset.into_pyobject(py)?.into_any(),
            r.timestamp.into_pyobject(py)?.into_any(),
            self.optional(r.key),
            self.optional(r.value),
            PyTuple::new(py, headers)?.into_any(),
            r.sequence.into_pyobject(py)?.into_any(),
            attributes,
            crc,
            valid,
        ];
        Bound::new(py, record::Record::of(fields))
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

/// The records of a v2 batch as an iterator of lists of `Record`s (payloads as bytes), or
/// None (a bad header, record count or compressed area): decode it in Python. The records
/// are checked as they are made: the iterator ends at a malformed one, and its `stopped`
/// says where Python reads on (see `records::RecordsV2`).
#[pyfunction]
fn records_v2<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    max_batch_bytes: usize,
) -> PyResult<Option<Bound<'py, records::RecordsV2>>> {
    let bytes = Bytes::get(batch)?;
    let data = bytes.as_slice();
    // With the GIL held: releasing it costs more than a small batch's decompression.
    let checked = handback::kernel(handback::Kernel::Records, data, || {
        batch::Cursor::new(data, max_batch_bytes)
    });
    match checked {
        Some((cursor, inflated)) => {
            Bound::new(py, records::RecordsV2::new(py, bytes, cursor, inflated)).map(Some)
        }
        None => Ok(None),
    }
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
    Ok(py.detach(|| {
        handback::kernel(handback::Kernel::LegacyScan, data, || {
            legacy::scan(data, magic)
        })
    }))
}

/// A v0/v1 wrapper message's value decompressed (`codec` 1-3, `magic` 0 or 1) within `limit`
/// bytes, exactly as `codecs.decompress(codec, value, magic=magic, limit=limit)` decompresses
/// it, or None: decompress it in Python, which says what is wrong (see
/// `codecs::decompress_legacy`).
/// The output is handed over without a copy (a read-only `Buffer`: a wrapper of a million
/// small messages decompresses to tens of MB, which a copy would double).
#[pyfunction]
fn legacy_decompress<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    codec: u8,
    magic: u8,
    limit: usize,
) -> PyResult<Option<Bound<'py, columns::Buffer>>> {
    let bytes = Bytes::get(value)?;
    let data = bytes.as_slice();
    let out = py.detach(|| {
        handback::kernel(handback::Kernel::LegacyDecompress, data, || {
            crate::codecs::decompress_legacy(codec, magic, data, limit)
        })
    });
    out.map(|raw| {
        Bound::new(
            py,
            columns::Buffer {
                data: columns::Column::Bytes(raw),
                spares: None,
            },
        )
    })
    .transpose()
}

fn wrapper(magic: u8, shift: i64, fixed_timestamp: Option<i64>) -> legacy::Wrapper {
    legacy::Wrapper {
        magic,
        shift,
        fixed_timestamp,
    }
}

/// The records of a v0/v1 wrapper's decompressed inner set as `Record`s with their `crc,
/// crc_valid`, or None: read it in Python. The caller bounds the number of records.
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
    let data = bytes.as_slice();
    if handback::kernel(handback::Kernel::LegacyRecords, data, || {
        legacy::decode(data, &w, &mut rows)
    })
    .is_none()
    {
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
    let done = py.detach(|| {
        handback::kernel(handback::Kernel::Reencode, data, || {
            encode::reencode(data, max_batch_bytes, mask, base_offset, base_timestamp)
        })
    });
    Ok(done.map(|d| {
        (
            PyBytes::new(py, &d.area),
            d.count,
            d.max_timestamp,
            d.base_timestamp,
        )
    }))
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

/// `(reason, count)` of the batches the native engine has handed back to the python engine
/// in this process, every reason in a fixed order (see `handback`).
#[pyfunction]
fn handbacks() -> Vec<(&'static str, u64)> {
    handback::counts()
}

/// Forget a mapping `watch_mapping` remembered, and the hand-backs of its bytes (a later
/// mapping at the same address holds other batches).
#[pyfunction]
fn unwatch_mapping(slot: usize) {
    if let Some((base, len)) = guard::unwatch(slot) {
        handback::forget(base, len);
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_v2, m)?)?;
    m.add_function(wrap_pyfunction!(watch_mapping, m)?)?;
    m.add_function(wrap_pyfunction!(unwatch_mapping, m)?)?;
    m.add_function(wrap_pyfunction!(crc32c_of, m)?)?;
    m.add_function(wrap_pyfunction!(crc_ahead, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_cut, m)?)?;
    m.add_function(wrap_pyfunction!(chunk_cut_file, m)?)?;
    m.add_function(wrap_pyfunction!(handbacks, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_decompress, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_scan, m)?)?;
    m.add_function(wrap_pyfunction!(records_legacy, m)?)?;
    m.add_function(wrap_pyfunction!(records_v2, m)?)?;
    m.add_function(wrap_pyfunction!(render::render_records, m)?)?;
    m.add_function(wrap_pyfunction!(render::render_run, m)?)?;
    m.add_function(wrap_pyfunction!(render::render_batch_lines, m)?)?;
    m.add_function(wrap_pyfunction!(reencode_v2, m)?)?;
    m.add_class::<columns::Columns>()?;
    m.add_class::<record::Record>()?;
    m.add_class::<records::RecordsV2>()?;
    m.add_function(wrap_pyfunction!(record::make_record, m)?)?;
    m.add_class::<columns::Buffer>()?;
    m.add_class::<clean::OffsetMap>()?;
    m.add_class::<find::FindFilter>()?;
    m.add_class::<stats::StatsRecords>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
