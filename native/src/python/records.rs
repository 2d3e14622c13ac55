//! `RecordsV2`: what `records_v2` returns, an iterator of lists of `CHUNK` records (Python
//! chains them) made as Python asks for them, not one list of the whole batch: a chunk is
//! made, read and freed while its memory is still in the cache. The batch is checked whole
//! first, so a malformed one is still handed back before any record is made.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyNone, PyTuple};

use super::record::Record;
use super::Bytes;
use crate::batch::{self, Cursor, Sink};

/// Where a batch's records are: in the caller's buffer (uncompressed: no copy) or
/// decompressed.
enum Area {
    Raw(Bytes),
    Inflated(Vec<u8>),
}

/// The records of one v2 batch, checked well formed before the first is made.
#[pyclass(module = "klogtool._native")]
pub(super) struct RecordsV2 {
    area: Area,
    cursor: Cursor,
    /// What every record without headers holds (one tuple, not one per record).
    empty: Py<PyTuple>,
    /// The last timestamp and its int: records of a batch often share their millisecond.
    timestamp: Option<(i64, Py<PyAny>)>,
}

impl RecordsV2 {
    /// The records of `batch`, which `cursor` (with `inflated`, its decompressed area) checked.
    pub(super) fn new(
        py: Python<'_>,
        batch: Bytes,
        cursor: Cursor,
        inflated: Option<Vec<u8>>,
    ) -> Self {
        RecordsV2 {
            area: match inflated {
                Some(v) => Area::Inflated(v),
                None => Area::Raw(batch),
            },
            cursor,
            empty: PyTuple::empty(py).unbind(),
            timestamp: None,
        }
    }
}

/// Records per list `__next__` makes: a list's records are made, read and freed while they
/// are in the cache; a call per record would cost more than the cache saves.
const CHUNK: usize = 64;

/// Makes the `Record` of one cursor step.
struct Make<'a, 'py> {
    py: Python<'py>,
    empty: &'a Py<PyTuple>,
    timestamp: &'a mut Option<(i64, Py<PyAny>)>,
    out: Option<PyResult<Bound<'py, Record>>>,
}

impl<'py> Make<'_, 'py> {
    fn optional(&self, v: Option<&[u8]>) -> Bound<'py, PyAny> {
        match v {
            Some(b) => PyBytes::new(self.py, b).into_any(),
            None => PyNone::get(self.py).to_owned().into_any(),
        }
    }

    fn make(&mut self, r: &batch::Record<'_>) -> PyResult<Bound<'py, Record>> {
        let py = self.py;
        let headers = if r.headers.is_empty() {
            self.empty.bind(py).clone().into_any()
        } else {
            let pairs = r.headers.iter().map(|(k, v)| {
                PyTuple::new(py, [k.into_pyobject(py)?.into_any(), self.optional(*v)])
            });
            PyTuple::new(py, pairs.collect::<PyResult<Vec<_>>>()?)?.into_any()
        };
        let timestamp = match self.timestamp {
            Some((ts, obj)) if *ts == r.timestamp => obj.bind(py).clone(),
            _ => {
                let obj = r.timestamp.into_pyobject(py)?.into_any();
                *self.timestamp = Some((r.timestamp, obj.clone().unbind()));
                obj
            }
        };
        let offset = r.offset.into_pyobject(py)?.into_any();
        // an idempotent producer's first batches number sequences as offsets: one int
        let sequence = if i64::from(r.sequence) == r.offset {
            offset.clone()
        } else {
            r.sequence.into_pyobject(py)?.into_any()
        };
        let none = PyNone::get(py).to_owned().into_any();
        let fields = [
            offset,
            timestamp,
            self.optional(r.key),
            self.optional(r.value),
            headers,
            sequence,
            r.attributes.into_pyobject(py)?.into_any(),
            none.clone(),
            none,
        ];
        Bound::new(py, Record::of(fields))
    }
}

impl Sink for Make<'_, '_> {
    fn record(&mut self, r: &batch::Record<'_>) {
        self.out = Some(self.make(r));
    }
}

#[pymethods]
impl RecordsV2 {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let area = match &self.area {
            Area::Raw(b) => b.as_slice().get(batch::HEADER_SIZE..).unwrap_or_default(),
            Area::Inflated(v) => v.as_slice(),
        };
        let n = self.cursor.left().min(CHUNK);
        if n == 0 {
            return Ok(None);
        }
        let mut make = Make {
            py,
            empty: &self.empty,
            timestamp: &mut self.timestamp,
            out: None,
        };
        let mut chunk = Vec::with_capacity(n);
        for _ in 0..n {
            if !self.cursor.next(area, &mut make) {
                // checked well formed when made: only a buffer written to since gets here
                return Err(PyRuntimeError::new_err(
                    "the batch changed while its records were read",
                ));
            }
            if let Some(made) = make.out.take() {
                chunk.push(made?);
            }
        }
        PyList::new(py, chunk).map(Some)
    }
}
