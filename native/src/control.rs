//! Control records decoded as `klogtool/formats/payloads/control.py`'s
//! `decode_control_record` decodes them, for dump-segments' native renderer: the key's type
//! and the value's fields in Kafka's JSON form, written as `json.dumps(fields,
//! separators=(",", ":"))` writes them.
//!
//! Only what is certainly decoded the same way is decoded: ABORT and COMMIT markers, types
//! Kafka does not know (no fields), and the small KRaft records (LEADER_CHANGE, SNAPSHOT_HEADER,
//! SNAPSHOT_FOOTER, KRAFT_VERSION) with one-byte array lengths and no tagged fields. Anything
//! else (an error the reference words, KRAFT_VOTERS, a tagged field, a longer varint) is
//! `None`: the batch is rendered in Python.
#![forbid(unsafe_code)]

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
    /// A one-byte unsigned varint (a longer one: `None`).
    fn small_varint(&mut self) -> Option<u8> {
        let [b] = self.take::<1>()?;
        (b < 0x80).then_some(b)
    }
    /// The tagged fields of a flexible struct: only none is read here.
    fn no_tags(&mut self) -> Option<()> {
        (self.small_varint()? == 0).then_some(())
    }
    /// A compact array of `{"voterId": int32}` (a non-null one).
    fn voters(&mut self, out: &mut String) -> Option<()> {
        let n = self.small_varint()?.checked_sub(1)?;
        out.push('[');
        for i in 0..n {
            if i > 0 {
                out.push(',');
            }
            let id = self.i32()?;
            self.no_tags()?;
            out.push_str("{\"voterId\":");
            out.push_str(itoa::Buffer::new().format(id));
            out.push('}');
        }
        out.push(']');
        Some(())
    }
}

fn int(out: &mut String, name: &str, v: impl itoa::Integer) {
    if !out.is_empty() {
        out.push(',');
    }
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
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
            fields.push_str(",\"voters\":");
            v.voters(&mut fields)?;
            fields.push_str(",\"grantingVoters\":");
            v.voters(&mut fields)?;
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
        _ => return None, // KRAFT_VOTERS
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
        assert_eq!(fields("00000006", Some("0000")), None); // KRAFT_VOTERS
        assert_eq!(fields("00000003", Some("00000000")), None); // cut short
    }
}
