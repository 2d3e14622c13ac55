//! `OffsetMap`: the log cleaner's offset map and retain decision (`crate::compact`), for
//! `klogtool/log/rewrite/native_clean.py`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::Bytes;
use crate::compact;
use crate::handback;

/// The log cleaner's offset map (key digest -> last offset), with the decisions that read it.
/// It behaves as the `dict` the Python cleaner uses (`len`, `map[digest] = offset`,
/// `map.get(digest, default)`), so a batch the native engine hands back updates it too.
#[pyclass(module = "klogtool._native")]
pub(super) struct OffsetMap {
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
        let added = py.detach(|| {
            handback::kernel(handback::Kernel::MapKeys, data, || {
                inner.add(data, max_batch_bytes, first_dirty, capacity)
            })
        });
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
        let done = py.detach(|| {
            handback::kernel(handback::Kernel::Retain, data, || {
                inner.retain(data, max_batch_bytes, latest_offset, keep_tombstones)
            })
        });
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
