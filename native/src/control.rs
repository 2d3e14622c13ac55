//! Control records decoded as `klogtool/formats/payloads/control.py`'s
//! `decode_control_record` decodes them, for dump-segments' native renderer: the key's type
//! and the value's fields in Kafka's JSON form, written as `json.dumps(fields,
//! separators=(",", ":"))` writes them.
//!
//! Only what is certainly decoded the same way is decoded: ABORT and COMMIT markers, types
//! Kafka does not know (no fields), and the KRaft records (LEADER_CHANGE, SNAPSHOT_HEADER,
//! SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS) with no tagged fields, lengths in their
//! shortest varint form and strings of printable ASCII other than `"` and `\` (written as they
//! are in JSON, on a terminal and by kafka-dump-log alike). Anything else (an error the
//! reference words, a tagged field, another string) is `None`: the batch is rendered in Python.
#![forbid(unsafe_code)]

use base64::Engine as _;

/// A decoded control record: the type's name and id, and the value's fields as the inside of
/// a compact JSON object (`"version":0,"coordinatorEpoch":5`; empty for none).
#[derive(Debug, PartialEq, Eq)]
pub struct Control {
    pub type_id: i16,
    pub name: &'static str,
    pub fields: String,
}

const NAMES: [&str; 7] = [
    "ABORT",
    "COMMIT",
    "LEADER_CHANGE",
    "SNAPSHOT_HEADER",
    "SNAPSHOT_FOOTER",
    "KRAFT_VERSION",
    "KRAFT_VOTERS",
];

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let end = self.pos.checked_add(N)?;
        let out = self.data.get(self.pos..end)?.try_into().ok()?;
        self.pos = end;
        Some(out)
    }
    fn i16(&mut self) -> Option<i16> {
        self.take::<2>().map(i16::from_be_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.take::<4>().map(i32::from_be_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take::<8>().map(i64::from_be_bytes)
    }
    /// An unsigned varint of at most three bytes in its shortest form (anything else: `None`).
    fn uvarint(&mut self) -> Option<u32> {
        let mut v = 0u32;
        for shift in [0, 7, 14] {
            let [b] = self.take::<1>()?;
            v |= u32::from(b & 0x7f) << shift;
            if b < 0x80 {
                return (shift == 0 || b != 0).then_some(v);
            }
        }
        None
    }
    /// The length of a compact array or string that is not null.
    fn compact_len(&mut self) -> Option<usize> {
        usize::try_from(self.uvarint()?.checked_sub(1)?).ok()
    }
    /// The tagged fields of a flexible struct: only none is read here.
    fn no_tags(&mut self) -> Option<()> {
        (self.uvarint()? == 0).then_some(())
    }
    /// A compact array, each element written by `item` (a non-null array).
    fn array(
        &mut self,
        out: &mut String,
        mut item: impl FnMut(&mut Self, &mut String) -> Option<()>,
    ) -> Option<()> {
        let n = self.compact_len()?;
        out.push('[');
        for i in 0..n {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            item(self, out)?;
            self.no_tags()?;
            out.push('}');
        }
        out.push(']');
        Some(())
    }
    /// A compact string of printable ASCII but `"` and `\`, quoted (anything else: `None`).
    fn plain_string(&mut self, out: &mut String) -> Option<()> {
        let n = self.compact_len()?;
        if n > 0x7fff {
            return None; // the reference's error
        }
        let end = self.pos.checked_add(n)?;
        let raw = self.data.get(self.pos..end)?;
        let plain = |b: &u8| (0x20..0x7f).contains(b) && *b != b'"' && *b != b'\\';
        if !raw.iter().all(plain) {
            return None;
        }
        self.pos = end;
        out.push('"');
        out.push_str(std::str::from_utf8(raw).ok()?);
        out.push('"');
        Some(())
    }
    /// A uuid in Kafka's text form: URL-safe base64 without padding.
    fn uuid(&mut self, out: &mut String) -> Option<()> {
        let raw = self.take::<16>()?;
        out.push('"');
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_string(raw, out);
        out.push('"');
        Some(())
    }
}

/// `"name":`, after a comma unless `out` starts an object or is empty.
fn field_name(out: &mut String, name: &str) {
    if !(out.is_empty() || out.ends_with('{')) {
        out.push(',');
    }
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

/// LeaderChangeMessage's `{"voterId": int32}`.
fn voter_id(v: &mut Reader<'_>, out: &mut String) -> Option<()> {
    int(out, "voterId", v.i32()?);
    Some(())
}

/// VotersRecord's voter: id, directory id, endpoints, supported kraft.version range.
fn voter(v: &mut Reader<'_>, out: &mut String) -> Option<()> {
    int(out, "voterId", v.i32()?);
    field_name(out, "voterDirectoryId");
    v.uuid(out)?;
    field_name(out, "endpoints");
    v.array(out, |v, out| {
        field_name(out, "name");
        v.plain_string(out)?;
        field_name(out, "host");
        v.plain_string(out)?;
        int(out, "port", u16::from_be_bytes(v.take::<2>()?));
        Some(())
    })?;
    field_name(out, "kRaftVersionFeature");
    out.push('{');
    int(out, "minSupportedVersion", v.i16()?);
    int(out, "maxSupportedVersion", v.i16()?);
    v.no_tags()?;
    out.push('}');
    Some(())
}

fn int(out: &mut String, field: &str, v: impl itoa::Integer) {
    field_name(out, field);
    out.push_str(itoa::Buffer::new().format(v));
}

/// The control record of `key` and `value`, or `None`: Python decodes it (or words its error).
pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Option<Control> {
    let mut k = Reader { data: key?, pos: 0 };
    let version = k.i16()?;
    let type_id = k.i16()?;
    if version < 0 {
        return None; // the reference's error
    }
    let Some(&name) = usize::try_from(type_id).ok().and_then(|t| NAMES.get(t)) else {
        return Some(Control {
            type_id,
            name: "UNKNOWN",
            fields: String::new(),
        });
    };
    let mut v = Reader {
        data: value?,
        pos: 0,
    };
    let mut fields = String::new();
    // bytes after the fields are not read (nor by the reference)
    match type_id {
        0 | 1 => {
            let marker_version = v.i16()?;
            let epoch = v.i32()?;
            if marker_version < 0 {
                return None;
            }
            int(&mut fields, "version", marker_version);
            int(&mut fields, "coordinatorEpoch", epoch);
        }
        2 => {
            int(&mut fields, "version", v.i16()?);
            int(&mut fields, "leaderId", v.i32()?);
            field_name(&mut fields, "voters");
            v.array(&mut fields, voter_id)?;
            field_name(&mut fields, "grantingVoters");
            v.array(&mut fields, voter_id)?;
            v.no_tags()?;
        }
        3 => {
            int(&mut fields, "version", v.i16()?);
            int(&mut fields, "lastContainedLogTimestamp", v.i64()?);
            v.no_tags()?;
        }
        4 => {
            int(&mut fields, "version", v.i16()?);
            v.no_tags()?;
        }
        5 => {
            int(&mut fields, "version", v.i16()?);
            int(&mut fields, "kRaftVersion", v.i16()?);
            v.no_tags()?;
        }
        _ => {
            int(&mut fields, "version", v.i16()?);
            field_name(&mut fields, "voters");
            v.array(&mut fields, voter)?;
            v.no_tags()?;
        }
    }
    Some(Control {
        type_id,
        name,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn fields(key: &str, value: Option<&str>) -> Option<(&'static str, String)> {
        let v = value.map(hex);
        decode(Some(&hex(key)), v.as_deref()).map(|c| (c.name, c.fields))
    }

    #[test]
    fn decodes_like_the_reference() {
        let f = |n: &'static str, s: &str| Some((n, s.to_string()));
        assert_eq!(
            fields("00000001", Some("000000000005ff")),
            f("COMMIT", "\"version\":0,\"coordinatorEpoch\":5")
        );
        assert_eq!(
            fields(
                "00000002",
                Some("000000000001030000000100000000020002000000010000")
            ),
            f(
                "LEADER_CHANGE",
                "\"version\":0,\"leaderId\":1,\"voters\":[{\"voterId\":1},{\"voterId\":2}],\
                 \"grantingVoters\":[{\"voterId\":1}]"
            )
        );
        assert_eq!(
            fields("00000003", Some("0000000000000000007b00")),
            f(
                "SNAPSHOT_HEADER",
                "\"version\":0,\"lastContainedLogTimestamp\":123"
            )
        );
        assert_eq!(
            fields("00000004", Some("000000")),
            f("SNAPSHOT_FOOTER", "\"version\":0")
        );
        assert_eq!(
            fields("00000005", Some("0000000100")),
            f("KRAFT_VERSION", "\"version\":0,\"kRaftVersion\":1")
        );
        assert_eq!(
            fields(
                "00000006",
                Some(
                    "0000030000000100000000000000000000000000000001020b434f4e54524f4c4c45520a6c6f\
                     63616c686f737423850000000001000000000002ffffffffffffffffffffffffffffffff01\
                     00000001000000"
                )
            ),
            f(
                "KRAFT_VOTERS",
                "\"version\":0,\"voters\":[{\"voterId\":1,\"voterDirectoryId\":\
                 \"AAAAAAAAAAAAAAAAAAAAAQ\",\"endpoints\":[{\"name\":\"CONTROLLER\",\
                 \"host\":\"localhost\",\"port\":9093}],\"kRaftVersionFeature\":\
                 {\"minSupportedVersion\":0,\"maxSupportedVersion\":1}},{\"voterId\":2,\
                 \"voterDirectoryId\":\"_____________________w\",\"endpoints\":[],\
                 \"kRaftVersionFeature\":{\"minSupportedVersion\":0,\"maxSupportedVersion\":1}}]"
            )
        );
        assert_eq!(fields("00000063", None), f("UNKNOWN", ""));
        assert_eq!(fields("0000ffff", Some("")), f("UNKNOWN", ""));
    }

    #[test]
    fn errors_and_the_unusual_are_left_to_python() {
        assert_eq!(fields("000000", Some("000000000005")), None); // short key
        assert_eq!(fields("ffff0001", Some("000000000005")), None); // negative version
        assert_eq!(fields("00000001", None), None); // null value
        assert_eq!(fields("00000001", Some("0000000000")), None); // short marker
        assert_eq!(fields("00000001", Some("ffff00000005")), None); // negative marker version
        assert_eq!(fields("00000002", Some("0000000000010000")), None); // null array
        assert_eq!(fields("00000002", Some("0000000000018001010000")), None); // long varint
        assert_eq!(fields("00000002", Some("00000000000101010100")), None); // a tagged field
                                                                            // KRAFT_VOTERS: one voter, then the same with a `"` and an `é` in its host, cut short,
                                                                            // and a two-byte varint of 1
        let voter = |host: &str| {
            let v = "0000000100000000000000000000000000000001020b434f4e54524f4c4c45520a";
            fields(
                "00000006",
                Some(&format!("000002{v}{host}23850000000001000000")),
            )
        };
        assert!(voter("6c6f63616c686f7374").is_some());
        assert_eq!(voter("6c6f63616c226f7374"), None);
        assert_eq!(voter("6c6f63616cc3a97374"), None);
        assert_eq!(fields("00000006", Some("0000020000000100")), None);
        assert_eq!(fields("00000006", Some("00008100")), None);
        assert_eq!(fields("00000003", Some("00000000")), None); // cut short
    }
}
