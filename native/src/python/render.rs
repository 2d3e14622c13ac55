//! `render_records`: the dump-segments lines of a batch (`crate::render`), for
//! `klogtool/log/read/native_render.py`.

use pyo3::prelude::*;

use super::columns::{Buffer, Column};
use super::{wrapper, Bytes};
use crate::columns;
use crate::handback;
use crate::render;

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
/// decompressed inner set; or None: render them in Python. `controls` says how control
/// records are shown: "decoded" (`--decoder auto`), "raw" (`--decoder none`: as any record),
/// or "python" (control batches are handed back). With `batch_line` (whether the batch's CRC
/// held), the lines begin with the batch's own (`render_batch_line`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (batch, max_batch_bytes, position, print_data, key_decoder, value_decoder, format, inner=None, controls="python", batch_line=None))]
pub(super) fn render_records<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    max_batch_bytes: usize,
    position: i64,
    print_data: bool,
    key_decoder: &str,
    value_decoder: &str,
    format: &str,
    inner: Option<(u8, i64, Option<i64>)>,
    controls: &str,
    batch_line: Option<bool>,
) -> PyResult<Option<Rendered<'py>>> {
    // Without --print-data the decoders show nothing.
    let parse = |name| match print_data {
        true => render::Payload::parse(name),
        false => Some(render::Payload::Omit),
    };
    let bytes = Bytes::get(batch)?;
    let (Some(key), Some(value)) = (parse(key_decoder), parse(value_decoder)) else {
        handback::note(handback::Reason::RenderDecoder);
        handback::count(handback::Kernel::Render, bytes.as_slice());
        return Ok(None);
    };
    let controls = match controls {
        "decoded" => render::Controls::Decoded,
        "raw" => render::Controls::Raw,
        _ => render::Controls::Python,
    };
    if !matches!(format, "jsonl" | "text" | "kafka") {
        handback::note(handback::Reason::RenderDecoder);
        handback::count(handback::Kernel::Render, bytes.as_slice());
        return Ok(None);
    }
    let source = match inner {
        None => render::Source::V2(bytes.as_slice()),
        Some((magic, shift, fixed)) => {
            render::Source::Legacy(bytes.as_slice(), wrapper(magic, shift, fixed))
        }
    };
    let data = bytes.as_slice();
    let head = match batch_line {
        None => Vec::new(),
        Some(crc_valid) if inner.is_none() => {
            match render::batch_line(format, data, position, crc_valid) {
                Some(line) => line,
                None => return Ok(None), // (not a v2 batch: asked for v2 batches only)
            }
        }
        Some(_) => return Ok(None),
    };
    let out = move |n: usize| {
        let mut buf = RENDERED.get(head.len() + n);
        buf.extend_from_slice(&head);
        buf
    };
    let rendered = py.detach(|| {
        handback::kernel(handback::Kernel::Render, data, || {
            let lines = match format {
                "kafka" => render::kafka(
                    source,
                    max_batch_bytes,
                    &out,
                    controls,
                    print_data,
                    key,
                    value,
                )
                .map(|k| (k.out, k.records, k.first, k.last, k.breaks)),
                "text" => render::text(
                    source,
                    max_batch_bytes,
                    &out,
                    controls,
                    print_data,
                    key,
                    value,
                )
                .map(|(out, n)| (out, n, None, None, Vec::new())),
                _ => render::jsonl(
                    source,
                    max_batch_bytes,
                    &out,
                    controls,
                    position,
                    print_data,
                    key,
                    value,
                )
                .map(|(out, n)| (out, n, None, None, Vec::new())),
            };
            // UTF-8 by construction (made of valid UTF-8 strings); checked all the same
            lines.filter(|l| std::str::from_utf8(&l.0).is_ok())
        })
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

/// The `dump-segments` line (`format`: "jsonl", "text" or "kafka") of the whole v2 batch
/// `batch` at `position`, its CRC held if `crc_valid`, as UTF-8 bytes; None if it is not one.
#[pyfunction]
pub(super) fn render_batch_line<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
    position: i64,
    crc_valid: bool,
    format: &str,
) -> PyResult<Option<Bound<'py, pyo3::types::PyBytes>>> {
    let bytes = Bytes::get(batch)?;
    let line = render::batch_line(format, bytes.as_slice(), position, crc_valid);
    Ok(line.map(|l| pyo3::types::PyBytes::new(py, &l)))
}
