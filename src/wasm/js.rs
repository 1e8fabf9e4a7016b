//! Small helpers for building the JavaScript values the API returns, and
//! for turning crate errors into JS `Error`s with a `kind`.

use js_sys::{BigInt, Object, Reflect};
use wasm_bindgen::JsValue;

use crate::catalog::Labels;
use crate::error::{EngineKind, Error, NotArchive};

/// A plain JS object under construction.
pub(crate) struct Obj(Object);

impl Obj {
    pub(crate) fn new() -> Obj {
        Obj(Object::new())
    }

    /// Sets `key`. Setting a property on a fresh plain object cannot fail.
    pub(crate) fn set(self, key: &str, value: impl Into<JsValue>) -> Obj {
        let _ = Reflect::set(&self.0, &JsValue::from_str(key), &value.into());
        self
    }

    pub(crate) fn build(self) -> JsValue {
        self.0.into()
    }
}

/// A timestamp or any value that may exceed 2^53: a `BigInt`.
pub(crate) fn big(v: i64) -> JsValue {
    BigInt::from(v).into()
}

/// A count or size: a plain number (exact below 2^53, which counts are).
pub(crate) fn num(v: i64) -> JsValue {
    JsValue::from_f64(v as f64)
}

/// A plain object with `entries` as its own properties. Each is defined,
/// not assigned, so a key from a file such as `__proto__` is an ordinary
/// property rather than a change of the object's prototype.
pub(crate) fn record<'a>(entries: impl IntoIterator<Item = (&'a str, JsValue)>) -> JsValue {
    let obj = Object::new();
    for (k, v) in entries {
        let descriptor = Object::new();
        let _ = Reflect::set(&descriptor, &JsValue::from_str("value"), &v);
        for flag in ["writable", "enumerable", "configurable"] {
            let _ = Reflect::set(&descriptor, &JsValue::from_str(flag), &JsValue::TRUE);
        }
        let _ = Reflect::define_property(&obj, &JsValue::from_str(k), &descriptor);
    }
    obj.into()
}

/// A string map as a plain object.
pub(crate) fn labels(map: &Labels) -> JsValue {
    record(map.iter().map(|(k, v)| (k.as_str(), JsValue::from_str(v))))
}

/// A JS `Error` with `message` and a machine-readable `kind`.
pub(crate) fn error(kind: &str, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    err.set_name("EngineError");
    let _ = Reflect::set(&err, &JsValue::from_str("kind"), &JsValue::from_str(kind));
    err.into()
}

/// A crate error as a JS `Error`. A refused file also carries what it is
/// instead as data: `detail` (and `application_id` for another
/// application's database) for `NotAnArchive`, `version` and
/// `supported_versions` (every version this build reads) for
/// `UnsupportedSchema`.
pub(crate) fn from_error(err: &Error) -> JsValue {
    let message = match err {
        Error::Sqlite { file, .. } if err.engine_kind() == EngineKind::TooLarge => {
            format!("{file}: the browser refused the memory to hold this archive ({err})")
        }
        _ => err.to_string(),
    };
    let js = error(err.engine_kind().name(), &message);
    let set = |key: &str, value: JsValue| {
        let _ = Reflect::set(&js, &JsValue::from_str(key), &value);
    };
    match err {
        Error::NotAnArchive { cause, .. } => {
            set("detail", JsValue::from_str(cause.detail()));
            if let NotArchive::ForeignApplication(id) = cause {
                set("application_id", JsValue::from_f64(f64::from(*id)));
            }
        }
        Error::UnsupportedSchema { version, .. } => {
            set("version", JsValue::from_f64(f64::from(*version)));
            let read = js_sys::Array::new();
            for v in crate::format::READABLE_SCHEMA_VERSIONS {
                read.push(&JsValue::from_f64(f64::from(v)));
            }
            set("supported_versions", read.into());
        }
        _ => {}
    }
    js
}
