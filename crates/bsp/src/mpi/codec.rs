//! Errors as bytes: each rank's outcome of a section, gathered on every rank, becomes the same
//! section result everywhere (the earliest fatal error, ties to the lowest pid).

use std::sync::Mutex;

use serde_json::{Value, json};

use crate::Error;

/// `None`: this rank took no part. `Some((dead, failure))`: whether the section failed, and
/// this process's own fatal error with the sync number it failed.
pub(crate) fn encode_outcome(outcome: Option<&(bool, Option<(u64, Error)>)>) -> Vec<u8> {
    let v = match outcome {
        None => Value::Null,
        Some((dead, failure)) => {
            let f = failure.as_ref().map(|(epoch, e)| json!([epoch, encode(e)]));
            json!([dead, f])
        }
    };
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The section result from every rank's record.
pub(crate) fn section_result(records: &[Vec<u8>]) -> Result<(), Error> {
    let mut dead = false;
    let mut best: Option<(u64, Error)> = None;
    for r in records {
        let Ok(Value::Array(v)) = serde_json::from_slice::<Value>(r) else { continue };
        dead |= v.first().and_then(Value::as_bool).unwrap_or(false);
        let Some(Value::Array(f)) = v.get(1) else { continue };
        let epoch = f.first().and_then(Value::as_u64).unwrap_or(u64::MAX);
        let err = f.get(1).map_or(Error::PeerFailed, decode);
        if best.as_ref().is_none_or(|(e, _)| epoch < *e) {
            best = Some((epoch, err));
        }
    }
    match best {
        Some((_, e)) => Err(e),
        None if dead => Err(Error::PeerFailed),
        None => Ok(()),
    }
}

fn encode(e: &Error) -> Value {
    match e {
        Error::OutOfMemory { what, requested } => json!(["OutOfMemory", what, requested]),
        Error::QueueFull { capacity } => json!(["QueueFull", capacity]),
        Error::RegisterFull { capacity } => json!(["RegisterFull", capacity]),
        Error::BadSlot { pid, slot, why } => json!(["BadSlot", pid, slot, why]),
        Error::OutOfBounds { pid, slot, offset, len, slot_len } => {
            json!(["OutOfBounds", pid, slot, offset, len, slot_len])
        }
        Error::BadPid { pid, p } => json!(["BadPid", pid, p]),
        Error::QueueOverflow { pid, count, capacity } => {
            json!(["QueueOverflow", pid, count, capacity])
        }
        Error::Poisoned => json!(["Poisoned"]),
        Error::Panicked { pid, message } => json!(["Panicked", pid, message]),
        Error::BadInit(m) => json!(["BadInit", m]),
        Error::Checked { pid, what } => json!(["Checked", pid, what]),
        other => json!(["Other", other.to_string()]),
    }
}

fn decode(v: &Value) -> Error {
    let a = |i: usize| v.get(i).and_then(Value::as_u64).unwrap_or(0);
    let n = |i: usize| a(i) as usize;
    let s = |i: usize| v.get(i).and_then(Value::as_str).unwrap_or("").to_string();
    let pid = a(1) as u32;
    match v.get(0).and_then(Value::as_str).unwrap_or("") {
        "OutOfMemory" => Error::OutOfMemory { what: intern(s(1)), requested: n(2) },
        "QueueFull" => Error::QueueFull { capacity: n(1) },
        "RegisterFull" => Error::RegisterFull { capacity: n(1) },
        "BadSlot" => Error::BadSlot { pid, slot: n(2), why: intern(s(3)) },
        "OutOfBounds" => {
            Error::OutOfBounds { pid, slot: n(2), offset: n(3), len: n(4), slot_len: n(5) }
        }
        "BadPid" => Error::BadPid { pid, p: a(2) as u32 },
        "QueueOverflow" => Error::QueueOverflow { pid, count: n(2), capacity: n(3) },
        "Poisoned" => Error::Poisoned,
        "Panicked" => Error::Panicked { pid, message: s(2) },
        "BadInit" => Error::BadInit(s(1)),
        "Checked" => Error::Checked { pid, what: s(2) },
        _ => Error::BadInit(format!("a peer failed: {}", s(1))),
    }
}

/// The error type's `&'static str` fields, from a peer: each distinct text is stored once for
/// the life of the program (they come from the crate's own fixed set of messages).
fn intern(s: String) -> &'static str {
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&t) = seen.iter().find(|&&t| t == s) {
        return t;
    }
    let t: &'static str = Box::leak(s.into_boxed_str());
    seen.push(t);
    t
}
