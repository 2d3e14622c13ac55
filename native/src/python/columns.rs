//! `Columns`: export's record columns in Arrow's layout (`crate::columns`), for
//! `klogtool/log/export/native_columns.py`; and `Buffer`, memory handed to Python without a
//! copy (the columns' and the rendered lines').

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{wrapper, Bytes};
use crate::columns;
use crate::handback;

/// Record columns of many v2 batches, in Arrow's layout.
#[pyclass(module = "klogtool._native")]
pub(super) struct Columns {
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
        Ok(py.detach(|| {
            handback::kernel(handback::Kernel::Columns, data, || {
                inner.add(data, index, (skip, limit))
            })
        }))
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
        Ok(py.detach(|| {
            handback::kernel(handback::Kernel::LegacyColumns, data, || {
                inner.add_legacy(data, &w, index, (skip, limit))
            })
        }))
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
pub(super) struct Buffer {
    pub(super) data: Column,
    /// Where the memory goes back to when Python drops the buffer (see `columns::Spares`).
    pub(super) spares: Option<columns::Spares>,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let (Column::Bytes(data), Some(spares)) = (&mut self.data, &self.spares) {
            spares.give(std::mem::take(data));
        }
    }
}

pub(super) enum Column {
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
    pub(super) fn new<T>(py: Python<'_>, data: Vec<T>) -> PyResult<Bound<'_, Buffer>>
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
