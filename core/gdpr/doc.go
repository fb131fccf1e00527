// Package gdpr encrypts the personal fields of a message's data object and
// decrypts them again, so that queues, retries and dead letters hold only
// ciphertext for them (the GDPR field encryption every BabelQueue SDK
// shares).
//
// Which fields are personal is declared in the per-URN JSON Schema with
// the x-gdpr-sensitive keyword; the schema module reads those marks
// (schema.Registry.SensitivePaths). Protect replaces each marked value by
// a JSON string, the Cipher's encryption of the value's JSON text, and
// changes no other byte of data: key order, unknown keys and the spelling
// of large integers stay as they were, and the envelope around data is not
// touched. Unprotect reverses it; a marked value that is not a string (never
// protected, or already decrypted) is left as it is, and a path absent from
// a message is skipped. A string that cannot be opened (a wrong key, a
// tampered value, no ciphertext at all) fails with an error matching
// ErrDecrypt.
//
// AESGCM is the reference cipher: AES-GCM with a random 12-byte nonce put
// before the sealed bytes, written in standard base64, which the other
// SDKs open with the same key. Keyring rotates keys (encrypt with the
// newest, decrypt with any) in that same format. Protector joins paths and
// a cipher into what babelqueue.WithFieldProtector takes; with
// WithSubjectKeys it picks one key per data subject (crypto-shredding: see
// the package example).
package gdpr
