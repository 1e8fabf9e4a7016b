//! Reading a JS `Uint8Array` as a `std::io::Read`, so SQLite's buffer is
//! filled straight from JS memory: the archive's bytes are copied into
//! wasm memory once, into the buffer SQLite then owns.

use js_sys::Uint8Array;

/// A cursor over a JS byte array.
pub(crate) struct JsBytes {
    array: Uint8Array,
    at: u32,
}

impl JsBytes {
    pub(crate) fn new(array: Uint8Array) -> JsBytes {
        JsBytes { array, at: 0 }
    }
}

impl std::io::Read for JsBytes {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.array.length() - self.at;
        let n = left.min(u32::try_from(buf.len()).unwrap_or(u32::MAX));
        if n == 0 {
            return Ok(0);
        }
        self.array
            .subarray(self.at, self.at + n)
            .copy_to(&mut buf[..n as usize]);
        self.at += n;
        Ok(n as usize)
    }
}
