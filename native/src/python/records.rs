//! `RecordsV2`: what `records_v2` returns, an iterator of lists of `CHUNK` records (Python
//! chains them) made as Python asks for them, not one list of the whole batch: a chunk is
//! made, read and freed while its memory is still in the cache. Each record is checked as it
//! is read: at a malformed one (or bytes after the last) the iterator ends, and `stopped`
//! says where the python engine reads on, yielding the same records and error from there as
//! its own walk of the whole batch would (it yields the records before a bad one too).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyNone, PyString, PyTuple};

use super::record::Record;
use super::Bytes;
use crate::batch::{self, Cursor, Sink, Step};
use crate::handback;

/// Where a batch's records are: in the caller's buffer (uncompressed: no copy) or
/// decompressed.
enum Area {
    Raw(Bytes),
    Inflated(Vec<u8>),
}

/// The records of one v2 batch, checked as they are made.
#[pyclass(module = "klogtool._native")]
pub(super) struct RecordsV2 {
    area: Area,
    /// The batch's address and length, which name it to `handback::count_at`.
    batch: (usize, usize),
    cursor: Cursor,
    /// What every record without headers holds (one tuple, not one per record).
    empty: Py<PyTuple>,
    /// The last timestamp and its int: records of a batch often share their millisecond.
    timestamp: Option<(i64, Py<PyAny>)>,
    /// Header names made so far: a batch's records repeat a few names (`traceparent`...).
    names: Names,
}

/// The first `NAMES` distinct header names of a batch and their strings (Python strings are
/// immutable: records share them, as they share the empty headers tuple).
#[derive(Default)]
struct Names(Vec<(Box<str>, Py<PyString>)>);

/// Names kept: more distinct names than this are made for each record that holds them.
const NAMES: usize = 8;

impl Names {
    fn get<'py>(&mut self, py: Python<'py>, name: &str) -> Bound<'py, PyString> {
        if let Some((_, s)) = self.0.iter().find(|(n, _)| **n == *name) {
            return s.bind(py).clone();
        }
        let s = PyString::new(py, name);
        if self.0.len() < NAMES {
            self.0.push((name.into(), s.clone().unbind()));
        }
        s
    }
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
            batch: (batch.as_slice().as_ptr() as usize, batch.as_slice().len()),
            area: match inflated {
                Some(v) => Area::Inflated(v),
                None => Area::Raw(batch),
            },
            cursor,
            empty: PyTuple::empty(py).unbind(),
            timestamp: None,
            names: Names::default(),
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
    names: &'a mut Names,
    /// The key and value of the record being read, made as the walk found them.
    payload: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
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
                let name = self.names.get(py, k).into_any();
                PyTuple::new(py, [name, self.optional(*v)])
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
        let (key, value) = match self.payload.take() {
            Some(made) => made,
            None => (self.optional(r.key), self.optional(r.value)),
        };
        let fields = [
            offset,
            timestamp,
            key,
            value,
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

    /// Copying the value now brings the cache lines after it in, where the walk reads the
    /// record's headers next (read before the copy, they were a cache miss a 1 KB record).
    fn payload(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) {
        self.payload = Some((self.optional(key), self.optional(value)));
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
        let mut make = Make {
            py,
            empty: &self.empty,
            timestamp: &mut self.timestamp,
            names: &mut self.names,
            payload: None,
            out: None,
        };
        let mut chunk = Vec::with_capacity(self.cursor.left().min(CHUNK));
        while chunk.len() < CHUNK {
            match self.cursor.next(area, &mut make) {
                Step::Record => {
                    if let Some(made) = make.out.take() {
                        chunk.push(made?);
                    }
                }
                Step::End => break,
                Step::Malformed => {
                    handback::count_at(handback::Kernel::Records, self.batch);
                    break;
                }
            }
        }
        if chunk.is_empty() {
            return Ok(None);
        }
        PyList::new(py, chunk).map(Some)
    }

    /// `(position in the records area, records read)` where the batch was found malformed
    /// once the iterator ended there (the python engine reads on from it), else None.
    #[getter]
    fn stopped(&self) -> Option<(usize, usize)> {
        self.cursor.stopped()
    }
}
