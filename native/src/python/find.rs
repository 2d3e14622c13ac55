//! `FindFilter`: find's record-level filters decided per record (`crate::find`), for
//! `klogtool/log/read/finder.py` through `klogtool/formats/engine.py`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::{Bytes, Rows};
use crate::batch::{Record, Sink};
use crate::find::{self, MatchSink, Spec};
use crate::handback;

/// find's exact-key, header, offset, time, size and (translated) regex conditions, made once
/// per search.
#[pyclass(module = "klogtool._native", frozen)]
pub(super) struct FindFilter {
    spec: Spec,
}

/// The matching records as `Record`s (as `records_v2` makes them), and their indexes in the
/// batch.
struct Found<'py> {
    rows: Rows<'py>,
    indexes: Vec<usize>,
}

impl MatchSink for Found<'_> {
    fn matched(&mut self, index: usize, r: &Record<'_>) {
        self.indexes.push(index);
        self.rows.record(r);
    }
}

/// `(records in the batch, indexes of the matching ones, their rows)`: see `matches`.
type Matched<'py> = (i32, Vec<usize>, Bound<'py, PyList>);

/// A header condition: `(name, value or None = any value)`.
type HeaderCondition<'py> = (String, Option<Bound<'py, PyBytes>>);

#[pymethods]
impl FindFilter {
    /// A regex the crate does not compile (past its size or nesting limits) is a ValueError:
    /// `engine.find_matcher` leaves the search to Python.
    #[new]
    #[pyo3(signature = (
        key, headers, offsets, from_time, to_time, min_size, max_size, key_regex, value_regex
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        key: Option<&[u8]>,
        headers: Vec<HeaderCondition<'_>>,
        offsets: Option<(i64, i64)>,
        from_time: Option<i64>,
        to_time: Option<i64>,
        min_size: Option<u64>,
        max_size: Option<u64>,
        key_regex: Option<&str>,
        value_regex: Option<&str>,
    ) -> PyResult<Self> {
        let regex = |pattern: Option<&str>| {
            pattern
                .map(|p| {
                    find::compile(p).ok_or_else(|| PyValueError::new_err("regex not compiled"))
                })
                .transpose()
        };
        let key_regex = regex(key_regex)?;
        let value_regex = regex(value_regex)?;
        let headers = headers
            .into_iter()
            .map(|(name, value)| (name.into_bytes(), value.map(|v| v.as_bytes().to_vec())))
            .collect();
        Ok(FindFilter {
            spec: Spec {
                key: key.map(<[u8]>::to_vec),
                headers,
                offsets,
                from_time,
                to_time,
                min_size,
                max_size,
                key_regex,
                value_regex,
            },
        })
    }

    /// `(records in the batch, indexes of the matching records, those `Record`s)` of a whole
    /// v2 batch, or None: read it in Python.
    fn matches<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
        max_batch_bytes: usize,
    ) -> PyResult<Option<Matched<'py>>> {
        let bytes = Bytes::get(batch)?;
        let data = bytes.as_slice();
        let mut found = Found {
            rows: Rows {
                py,
                rows: Vec::new(),
                error: None,
            },
            indexes: Vec::new(),
        };
        // Python objects are made as the matches are found: the GIL stays held.
        let header = handback::kernel(handback::Kernel::Find, data, || {
            find::find(data, max_batch_bytes, &self.spec, &mut found)
        });
        let Some(header) = header else {
            return Ok(None);
        };
        if let Some(e) = found.rows.error {
            return Err(e);
        }
        Ok(Some((
            header.records_count,
            found.indexes,
            PyList::new(py, found.rows.rows)?,
        )))
    }
}
