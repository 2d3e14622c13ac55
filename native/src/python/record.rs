//! `Record`: klogtool's record object (`klogtool.formats.batch.Record` when the native module
//! is built; `batch.py`'s pure-Python `PyRecord` with the same behaviour when it is not).
//! `records_v2`, `records_legacy` and find's matcher make them directly, so no Python loop
//! turns tuples into records, and the python engine makes the same type.
//!
//! The class is frozen so that PyO3 gives its `Py` fields as Python struct members: a field
//! is read as fast as a `__slots__` slot (the interpreter's specialised slot load), where a
//! getter function costs about twice the read on every access. Its fields therefore cannot be
//! assigned (`_replace` makes a changed copy). It may be subclassed (a subclass may compute a
//! field when first read): the named-tuple methods read a subclass's fields through its
//! attributes.

use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyBool, PyDict, PyIterator, PyString, PyTuple, PyType};

/// The nine field names, in order (`_fields`, `__match_args__`).
pub(super) const FIELDS: [&str; 9] = [
    "offset",
    "timestamp",
    "key",
    "value",
    "headers",
    "sequence",
    "attributes",
    "crc",
    "crc_valid",
];

/// One logical record; see `klogtool/formats/batch.py` (`PyRecord`) for what it promises.
/// The freelist reuses freed records without a trip to the allocator (a record is made per
/// record read); a Python subclass gets CPython's own allocator, not the list.
#[pyclass(module = "klogtool.formats.batch", frozen, subclass, freelist = 256)]
pub(super) struct Record {
    #[pyo3(get)]
    offset: Py<PyAny>,
    #[pyo3(get)]
    timestamp: Py<PyAny>,
    #[pyo3(get)]
    key: Py<PyAny>,
    #[pyo3(get)]
    value: Py<PyAny>,
    #[pyo3(get)]
    headers: Py<PyAny>,
    #[pyo3(get)]
    sequence: Py<PyAny>,
    #[pyo3(get)]
    attributes: Py<PyAny>,
    #[pyo3(get)]
    crc: Py<PyAny>,
    #[pyo3(get)]
    crc_valid: Py<PyAny>,
}

impl Record {
    /// A record of the nine fields, as the decoders make them.
    pub(super) fn of(fields: [Bound<'_, PyAny>; 9]) -> Self {
        let [offset, timestamp, key, value, headers, sequence, attributes, crc, crc_valid] =
            fields.map(Bound::unbind);
        Record {
            offset,
            timestamp,
            key,
            value,
            headers,
            sequence,
            attributes,
            crc,
            crc_valid,
        }
    }

    fn fields<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        if slf.get_type().is(py.get_type::<Record>()) {
            let r = slf.get();
            return PyTuple::new(
                py,
                [
                    &r.offset,
                    &r.timestamp,
                    &r.key,
                    &r.value,
                    &r.headers,
                    &r.sequence,
                    &r.attributes,
                    &r.crc,
                    &r.crc_valid,
                ],
            );
        }
        // a subclass may compute a field: its attributes
        let values = FIELDS
            .iter()
            .map(|name| slf.getattr(*name))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, values)
    }
}

#[pymethods]
impl Record {
    #[new]
    #[pyo3(signature = (offset, timestamp, key, value, headers=None, sequence=None, attributes=None, crc=None, crc_valid=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        offset: Py<PyAny>,
        timestamp: Py<PyAny>,
        key: Py<PyAny>,
        value: Py<PyAny>,
        headers: Option<Py<PyAny>>,
        sequence: Option<Py<PyAny>>,
        attributes: Option<Py<PyAny>>,
        crc: Option<Py<PyAny>>,
        crc_valid: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        Ok(Record {
            offset,
            timestamp,
            key,
            value,
            headers: match headers {
                Some(h) => h,
                None => PyTuple::empty(py).into_any().unbind(),
            },
            sequence: match sequence {
                Some(s) => s,
                None => (-1i64).into_pyobject(py)?.into_any().unbind(),
            },
            attributes: match attributes {
                Some(a) => a,
                None => 0i64.into_pyobject(py)?.into_any().unbind(),
            },
            crc: crc.unwrap_or_else(|| py.None()),
            crc_valid: crc_valid.unwrap_or_else(|| py.None()),
        })
    }

    #[classattr]
    fn _fields(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
        PyTuple::new(py, FIELDS)
    }

    #[classattr]
    fn __match_args__(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
        PyTuple::new(py, FIELDS)
    }

    fn _astuple<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        Record::fields(slf)
    }

    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyIterator>> {
        Record::fields(slf)?.as_any().try_iter()
    }

    fn __len__(&self) -> usize {
        FIELDS.len()
    }

    fn __getitem__<'py>(
        slf: &Bound<'py, Self>,
        index: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Record::fields(slf)?.as_any().get_item(index)
    }

    fn __richcmp__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if !matches!(op, CompareOp::Eq | CompareOp::Ne) {
            return Ok(py.NotImplemented());
        }
        let theirs = if let Ok(record) = other.cast::<Record>() {
            Record::fields(record)?
        } else if let Ok(tuple) = other.cast::<PyTuple>() {
            tuple.clone()
        } else {
            return Ok(py.NotImplemented());
        };
        let same = Record::fields(slf)?.eq(theirs)?;
        Ok(PyBool::new(py, same == matches!(op, CompareOp::Eq))
            .to_owned()
            .into_any()
            .unbind())
    }

    fn __hash__(slf: &Bound<'_, Self>) -> PyResult<isize> {
        Record::fields(slf)?.hash()
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let values = Record::fields(slf)?;
        let mut out = String::from("Record(");
        for (i, (name, value)) in FIELDS.iter().zip(values.iter()).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(name);
            out.push('=');
            out.push_str(&value.repr()?.to_cow()?);
        }
        out.push(')');
        Ok(out)
    }

    #[pyo3(signature = (**changes))]
    fn _replace<'py>(
        slf: &Bound<'py, Self>,
        changes: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fields = Record::_asdict(slf)?;
        if let Some(changes) = changes {
            fields.update(changes.as_mapping())?;
        }
        slf.py().get_type::<Record>().call((), Some(&fields))
    }

    fn _asdict<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let dict = PyDict::new(py);
        for (name, value) in FIELDS.iter().zip(Record::fields(slf)?.iter()) {
            dict.set_item(PyString::intern(py, name), value)?;
        }
        Ok(dict)
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        Ok((slf.py().get_type::<Record>(), Record::fields(slf)?))
    }
}

/// `Record(offset, timestamp, key, value, headers, sequence, attributes, crc, crc_valid)`
/// with every field given: what the python engine's decode loops call per record (a plain
/// function call costs less than calling the class).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(super) fn make_record<'py>(
    offset: Bound<'py, PyAny>,
    timestamp: Bound<'py, PyAny>,
    key: Bound<'py, PyAny>,
    value: Bound<'py, PyAny>,
    headers: Bound<'py, PyAny>,
    sequence: Bound<'py, PyAny>,
    attributes: Bound<'py, PyAny>,
    crc: Bound<'py, PyAny>,
    crc_valid: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, Record>> {
    let py = offset.py();
    Bound::new(
        py,
        Record::of([
            offset, timestamp, key, value, headers, sequence, attributes, crc, crc_valid,
        ]),
    )
}
