//! `StatsRecords`: stats' per-record aggregates of one partition (`crate::stats`), for
//! `klogtool/log/read/native_stats.py`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::Bytes;
use crate::handback;
use crate::stats::{self, Sizes, State};

/// A record the Python engine read: `(key, value length, timestamp, header count, header
/// bytes)`.
type Row = (Option<Vec<u8>>, Option<u64>, i64, u64, u64);

/// The per-record aggregates of one partition, fed a batch at a time.
#[pyclass(module = "klogtool._native")]
pub(super) struct StatsRecords {
    state: State,
}

fn sizes<'py>(py: Python<'py>, s: &Sizes) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("buckets", s.buckets.to_vec())?;
    d.set_item("count", s.count)?;
    d.set_item("nulls", s.nulls)?;
    d.set_item("total", s.total)?;
    d.set_item("min", s.min)?;
    d.set_item("max", s.max)?;
    Ok(d)
}

#[pymethods]
impl StatsRecords {
    #[new]
    fn new(now: i64, exact_keys: usize, heavy_counters: usize) -> Self {
        StatsRecords {
            state: State::new(now, exact_keys, heavy_counters),
        }
    }

    /// Count the records of a whole v2 batch that is not a control batch: `(records,
    /// uncompressed records area bytes)`, or None (nothing counted): read it in Python and
    /// hand its records to `add_rows`.
    fn batch(
        &mut self,
        batch: &Bound<'_, PyAny>,
        max_batch_bytes: usize,
        aborted: bool,
        expired: bool,
    ) -> PyResult<Option<(usize, usize)>> {
        let bytes = Bytes::get(batch)?;
        let data = bytes.as_slice();
        let state = &mut self.state;
        // Find's kernel name: a refusal here and the records kernel's on the same bytes (the
        // Python reading that follows) count one hand-back
        Ok(handback::kernel(handback::Kernel::Find, data, || {
            state.batch(data, max_batch_bytes, aborted, expired)
        }))
    }

    /// The decompressed records area of the last batch counted (empty when it was not
    /// compressed), at most `limit` bytes of it.
    fn area<'py>(&self, py: Python<'py>, limit: usize) -> Bound<'py, PyBytes> {
        let area = self.state.area();
        PyBytes::new(py, &area[..area.len().min(limit)])
    }

    /// Records the Python engine read, in order: `(key, value length or None, timestamp,
    /// header count, header bytes)`.
    fn add_rows(&mut self, rows: Vec<Row>, aborted: bool, expired: bool) {
        for (key, value, ts, count, header_bytes) in rows {
            let key = key.as_deref().map(|k| {
                let h = if aborted { 0 } else { stats::key_hash(k) };
                (h, k.len() as u64, k)
            });
            self.state
                .add(ts, key, value, count, header_bytes, aborted, expired);
        }
    }

    /// The aggregates, finished (see `native_stats.finish`).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let exact = self.state.finish();
        let s = &self.state;
        let d = PyDict::new(py);
        d.set_item("key_sizes", sizes(py, &s.key_sizes)?)?;
        d.set_item("value_sizes", sizes(py, &s.value_sizes)?)?;
        d.set_item("header_sizes", sizes(py, &s.header_sizes)?)?;
        d.set_item("header_counts", sizes(py, &s.header_counts)?)?;
        for (name, v) in [
            ("tombstones", s.tombstones),
            ("no_timestamp", s.no_timestamp),
            ("out_of_order", s.out_of_order),
            ("future", s.future),
            ("aborted", s.aborted),
            ("keyless", s.keyless),
            ("keyed", s.keyed),
            ("expired_after", s.expired_after),
        ] {
            d.set_item(name, v)?;
        }
        d.set_item("first_timestamp", s.first_timestamp)?;
        d.set_item("max_ts", s.max_ts)?;
        d.set_item("time_width", s.times.width)?;
        d.set_item("time_counts", s.times.counts.clone())?;
        d.set_item("exact", exact.map(|e| (e.distinct, e.tombstones_expired)))?;
        d.set_item(
            "hll",
            s.hll.as_ref().map(|h| PyBytes::new(py, &h.registers)),
        )?;
        d.set_item("distinct_exact", s.distinct_exact)?;
        d.set_item("top_exact", s.top_exact)?;
        let top = PyList::empty(py);
        for (h, c) in &s.top.counts {
            top.append((*h, PyBytes::new(py, &c.label), c.count, c.error))?;
        }
        d.set_item("top", top)?;
        d.set_item("top_floor", s.top.floor)?;
        Ok(d)
    }
}
