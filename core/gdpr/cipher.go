package gdpr

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
)

// ErrDecrypt reports a protected field that could not be restored: a
// wrong key, a tampered or truncated ciphertext, or a plaintext that is not
// JSON.
var ErrDecrypt = errors.New("gdpr: cannot decrypt a protected field")

// ErrKey reports a key of a size AES does not take, or a missing one.
var ErrKey = errors.New("gdpr: bad key")

// Cipher encrypts one field value and decrypts it again. Implementations
// bind a KMS, a Vault transit engine, an HSM or a local key; they must be
// safe for concurrent use.
//
// Encrypt gets the JSON text of one value and returns a string that may
// differ on every call (a random nonce is expected). Decrypt returns
// exactly the bytes Encrypt was given, and must fail, never return other
// bytes, for a string it did not produce or produced under another key.
type Cipher interface {
	Encrypt(plaintext []byte) (string, error)
	Decrypt(ciphertext string) ([]byte, error)
}

// NonceSize is the length of the random nonce AESGCM puts before the
// sealed bytes.
const NonceSize = 12

// AESGCM is the reference cipher, AES-GCM under one key, in the format
// the other BabelQueue SDKs read and write. Its output is the standard
// base64, with padding, of a random 12-byte nonce followed by the sealed
// bytes (ciphertext and 16-byte tag); there is no additional data. It is
// safe for concurrent use.
type AESGCM struct {
	aead cipher.AEAD
}

// NewAESGCM returns the reference cipher under key, which must be 16, 24
// or 32 bytes long. Those are AES-128, -192 and -256; another length fails
// with an error matching ErrKey.
func NewAESGCM(key []byte) (*AESGCM, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("%w: AES-GCM takes a 16, 24 or 32 byte key, not %d bytes", ErrKey, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	return &AESGCM{aead: aead}, nil
}

// Encrypt seals plaintext under a fresh random nonce.
func (c *AESGCM) Encrypt(plaintext []byte) (string, error) {
	n := NonceSize + len(plaintext) + c.aead.Overhead()
	buf := make([]byte, NonceSize, n)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("gdpr: reading a nonce: %w", err)
	}
	buf = c.aead.Seal(buf, buf[:NonceSize], plaintext, nil)
	return base64.StdEncoding.EncodeToString(buf), nil
}

// appendSealedJSON appends Encrypt(plaintext) as a JSON string to dst
// (base64 needs no escaping), sealing in scratch; it returns both, so a
// caller sealing several values reuses one scratch buffer.
func (c *AESGCM) appendSealedJSON(dst, scratch, plaintext []byte) ([]byte, []byte, error) {
	buf := scratch[:0]
	if n := NonceSize + len(plaintext) + c.aead.Overhead(); cap(buf) < n {
		buf = make([]byte, 0, max(n, 256))
	}
	buf = buf[:NonceSize]
	if _, err := rand.Read(buf); err != nil {
		return dst, buf, fmt.Errorf("gdpr: reading a nonce: %w", err)
	}
	buf = c.aead.Seal(buf, buf[:NonceSize], plaintext, nil)
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, buf)
	return append(dst, '"'), buf, nil
}

// Decrypt opens a value Encrypt (or another SDK's reference cipher under
// the same key) produced; anything else fails with an error matching
// ErrDecrypt.
func (c *AESGCM) Decrypt(ciphertext string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(ciphertext)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64: %w", ErrDecrypt, err)
	}
	if len(raw) < NonceSize+c.aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes is too short for a nonce and a tag", ErrDecrypt, len(raw))
	}
	out, err := c.aead.Open(nil, raw[:NonceSize], raw[NonceSize:], nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecrypt, err)
	}
	return out, nil
}

// Keyring rotates keys: it encrypts with its newest cipher and decrypts
// with whichever of its ciphers opens the value, newest first. The ciphers
// write their own format unchanged (a Keyring of AESGCM ciphers writes the
// reference format), so a peer holding the right single key opens what it
// wrote. It is safe for concurrent use.
type Keyring struct {
	ciphers []Cipher
}

// NewKeyring returns a keyring that encrypts with newest and decrypts with
// newest or any of older (tried in the order given). A nil cipher fails
// with an error matching ErrKey.
func NewKeyring(newest Cipher, older ...Cipher) (*Keyring, error) {
	all := append([]Cipher{newest}, older...)
	for i, c := range all {
		if c == nil {
			return nil, fmt.Errorf("%w: keyring cipher %d is nil", ErrKey, i)
		}
	}
	return &Keyring{ciphers: all}, nil
}

// NewAESGCMKeyring is NewKeyring of the reference cipher under each key,
// newest first.
func NewAESGCMKeyring(newest []byte, older ...[]byte) (*Keyring, error) {
	var errs []error
	ciphers := make([]Cipher, 0, 1+len(older))
	for i, k := range append([][]byte{newest}, older...) {
		c, err := NewAESGCM(k)
		if err != nil {
			errs = append(errs, fmt.Errorf("key %d: %w", i, err))
			continue
		}
		ciphers = append(ciphers, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return NewKeyring(ciphers[0], ciphers[1:]...)
}

// Encrypt encrypts with the newest cipher.
func (k *Keyring) Encrypt(plaintext []byte) (string, error) {
	return k.ciphers[0].Encrypt(plaintext)
}

// Decrypt returns what the first cipher able to open ciphertext returns;
// when none can, the error matches ErrDecrypt and joins theirs.
func (k *Keyring) Decrypt(ciphertext string) ([]byte, error) {
	var errs []error
	for _, c := range k.ciphers {
		out, err := c.Decrypt(ciphertext)
		if err == nil {
			return out, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w: no key of the keyring opens it: %w", ErrDecrypt, errors.Join(errs...))
}
