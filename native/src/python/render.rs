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

/// How the records are rendered: the arguments every batch of a call shares.
#[derive(Clone, Copy)]
struct How<'a> {
    format: &'a str,
    max_batch_bytes: usize,
    print_data: bool,
    key: render::Payload,
    value: render::Payload,
    controls: render::Controls,
}

impl<'a> How<'a> {
    /// None: a decoder or format only Python renders (every batch is handed back).
    fn parse(
        format: &'a str,
        max_batch_bytes: usize,
        print_data: bool,
        key_decoder: &str,
        value_decoder: &str,
        controls: &str,
    ) -> Option<How<'a>> {
        // Without --print-data the decoders show nothing.
        let parse = |name| match print_data {
            true => render::Payload::parse(name),
            false => Some(render::Payload::Omit),
        };
        let (Some(key), Some(value)) = (parse(key_decoder), parse(value_decoder)) else {
            return None;
        };
        if !matches!(format, "jsonl" | "text" | "kafka") {
            return None;
        }
        let controls = match controls {
            "decoded" => render::Controls::Decoded,
            "raw" => render::Controls::Raw,
            _ => render::Controls::Python,
        };
        Some(How {
            format,
            max_batch_bytes,
            print_data,
            key,
            value,
            controls,
        })
    }

    /// The record lines of `source` (at `position`) appended to `out`: their number, first
    /// and last offsets and breaks; or None (a hand-back, counted; `out` as it was).
    fn append(
        &self,
        source: render::Source<'_>,
        data: &[u8],
        position: i64,
        out: &mut Vec<u8>,
    ) -> Option<Lines> {
        let start = out.len();
        handback::kernel(handback::Kernel::Render, data, || {
            let (m, k, v) = (self.max_batch_bytes, self.key, self.value);
            let (c, p) = (self.controls, self.print_data);
            let lines = match self.format {
                "kafka" => render::kafka(source, m, out, c, p, k, v)
                    .map(|l| (l.records, l.first, l.last, l.breaks)),
                "text" => render::text(source, m, out, c, p, k, v).map(|n| (n, None, None, vec![])),
                _ => render::jsonl(source, m, out, c, position, p, k, v)
                    .map(|n| (n, None, None, vec![])),
            };
            // UTF-8 by construction (made of valid UTF-8 strings); checked all the same
            if lines.is_some() && std::str::from_utf8(&out[start..]).is_err() {
                out.truncate(start);
                return None;
            }
            lines
        })
    }
}

/// The hand-back of a batch whose decoder or format only Python renders.
fn refused_decoder(data: &[u8]) {
    handback::note(handback::Reason::RenderDecoder);
    handback::count(handback::Kernel::Render, data);
}

/// A batch's record lines: their number, first and last offsets, breaks.
type Lines = (usize, Option<i64>, Option<i64>, Vec<(i64, i64)>);

/// Handed over as UTF-8 bytes without a copy (the caller writes them as they are); the memory
/// comes back for later batches when Python drops it.
fn handed_over(py: Python<'_>, lines: Vec<u8>) -> PyResult<Bound<'_, Buffer>> {
    Bound::new(
        py,
        Buffer {
            data: Column::Bytes(lines),
            spares: Some(RENDERED.clone()),
        },
    )
}

/// `dump-segments` lines (`format`: "jsonl", "text" or "kafka") of every record of a whole v2
/// batch, or with `inner` (`(magic, shift, fixed timestamp)`) of a v0/v1 wrapper's
/// decompressed inner set; or None: render them in Python. `controls` says how control
/// records are shown: "decoded" (`--decoder auto`), "raw" (`--decoder none`: as any record),
/// or "python" (control batches are handed back).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (batch, max_batch_bytes, position, print_data, key_decoder, value_decoder, format, inner=None, controls="python"))]
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
) -> PyResult<Option<Rendered<'py>>> {
    let bytes = Bytes::get(batch)?;
    let data = bytes.as_slice();
    let how = How::parse(
        format,
        max_batch_bytes,
        print_data,
        key_decoder,
        value_decoder,
        controls,
    );
    let Some(how) = how else {
        refused_decoder(data);
        return Ok(None);
    };
    let source = match inner {
        None => render::Source::V2(data),
        Some((magic, shift, fixed)) => render::Source::Legacy(data, wrapper(magic, shift, fixed)),
    };
    let mut out = RENDERED.get(render::estimate(&source));
    let rendered = py.detach(|| how.append(source, data, position, &mut out));
    let Some((n, first, last, breaks)) = rendered else {
        RENDERED.give(out);
        return Ok(None);
    };
    Ok(Some((handed_over(py, out)?, n, first, last, breaks)))
}

/// One piece of `render_run`'s answer: the lines of a stretch of batches (each batch's line,
/// then its records'), the number of batches and of records, the first and last record
/// offsets and the breaks in the stretch (kafka); or, lines None, one batch handed back.
type Piece<'py> = (
    Option<Bound<'py, Buffer>>,
    usize,
    usize,
    Option<i64>,
    Option<i64>,
    Vec<(i64, i64)>,
);

/// `render_records` of a run of whole v2 batches (`(batch, position, crc_valid)` each, in
/// segment order) with their batch lines, in one call: the lines of consecutive batches go
/// into one buffer, a batch handed back (counted as `render_records` counts it) between two
/// stretches. The breaks of a stretch include those between its batches, as the kafka
/// renderer finds them from one batch's lines to the next.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (batches, max_batch_bytes, print_data, key_decoder, value_decoder, format, controls="python"))]
pub(super) fn render_run<'py>(
    py: Python<'py>,
    batches: Vec<(Bound<'py, PyAny>, i64, bool)>,
    max_batch_bytes: usize,
    print_data: bool,
    key_decoder: &str,
    value_decoder: &str,
    format: &str,
    controls: &str,
) -> PyResult<Vec<Piece<'py>>> {
    let held = batches
        .iter()
        .map(|(b, position, crc_valid)| Ok((Bytes::get(b)?, *position, *crc_valid)))
        .collect::<PyResult<Vec<_>>>()?;
    let how = How::parse(
        format,
        max_batch_bytes,
        print_data,
        key_decoder,
        value_decoder,
        controls,
    );
    let stretches = py.detach(|| {
        let items: Vec<(&[u8], i64, bool)> = held
            .iter()
            .map(|(b, p, c)| (b.as_slice(), *p, *c))
            .collect();
        run(how, &items)
    });
    stretches
        .into_iter()
        .map(|s| match s {
            Stretch::HandedBack => Ok((None, 1, 0, None, None, Vec::new())),
            Stretch::Lines(out, batches, (n, first, last, breaks)) => {
                Ok((Some(handed_over(py, out)?), batches, n, first, last, breaks))
            }
        })
        .collect()
}

enum Stretch {
    /// The lines of consecutive batches, their number and what `Lines` says of them together.
    Lines(Vec<u8>, usize, Lines),
    HandedBack,
}

/// The stretches of `items` (see `render_run`).
fn run(how: Option<How<'_>>, items: &[(&[u8], i64, bool)]) -> Vec<Stretch> {
    let Some(how) = how else {
        return items
            .iter()
            .map(|(data, ..)| {
                refused_decoder(data);
                Stretch::HandedBack
            })
            .collect();
    };
    // what the rest of the run takes, for each stretch's buffer
    let need = |data| 512 + render::estimate(&render::Source::V2(data));
    let mut left: usize = items.iter().map(|(data, ..)| need(data)).sum();
    let mut stretches = Vec::new();
    let mut open: Option<(Vec<u8>, usize, Lines)> = None;
    for &(data, position, crc_valid) in items {
        left = left.saturating_sub(need(data));
        let (out, batches, seen) = open.get_or_insert_with(|| {
            let out = RENDERED.get(need(data) + left);
            (out, 0, (0, None, None, vec![]))
        });
        let start = out.len();
        // (no batch line: not a v2 batch; Python asks for v2 batches only)
        let done = render::batch_line(out, how.format, data, position, crc_valid)
            .then(|| how.append(render::Source::V2(data), data, position, out))
            .flatten();
        let Some((n, first, last, breaks)) = done else {
            out.truncate(start);
            close(open.take(), &mut stretches);
            stretches.push(Stretch::HandedBack);
            continue;
        };
        *batches += 1;
        seen.0 += n;
        if let Some(f) = first {
            // the kafka renderer's break from one batch's lines to the next
            if let Some(l) = seen.2.filter(|&l| l != -1) {
                if Some(f) != l.checked_add(1) {
                    seen.3.push((l, f));
                }
            }
            seen.1.get_or_insert(f);
            seen.3.extend(breaks);
            seen.2 = last;
        }
    }
    close(open, &mut stretches);
    stretches
}

/// The stretch `open` held, if it has a batch (its buffer back to the spares if not).
fn close(open: Option<(Vec<u8>, usize, Lines)>, stretches: &mut Vec<Stretch>) {
    match open {
        Some((out, batches, seen)) if batches > 0 => {
            stretches.push(Stretch::Lines(out, batches, seen))
        }
        Some((out, ..)) => RENDERED.give(out),
        None => {}
    }
}

/// Rendered lines' buffers that Python has written, for later batches: with `dump-segments
/// --jobs` about a hundred are in flight at once (the threads' tasks: 2 MiB of batches each).
static RENDERED: std::sync::LazyLock<columns::Spares> =
    std::sync::LazyLock::new(|| columns::Spares::new(256, 4 << 20));

/// The `dump-segments` lines (`format`: "jsonl", "text" or "kafka") of the whole v2 batches
/// `batches` (`(batch, position, crc_valid)` each: its CRC held if `crc_valid`), one after the
/// other, as UTF-8 bytes; None if one is not a whole v2 batch.
#[pyfunction]
pub(super) fn render_batch_lines<'py>(
    py: Python<'py>,
    batches: Vec<(Bound<'py, PyAny>, i64, bool)>,
    format: &str,
) -> PyResult<Option<Bound<'py, pyo3::types::PyBytes>>> {
    let mut out = Vec::with_capacity(batches.len() * 512);
    for (batch, position, crc_valid) in &batches {
        let bytes = Bytes::get(batch)?;
        if !render::batch_line(&mut out, format, bytes.as_slice(), *position, *crc_valid) {
            return Ok(None);
        }
    }
    Ok(Some(pyo3::types::PyBytes::new(py, &out)))
}
