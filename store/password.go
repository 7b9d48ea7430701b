package store

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// argon2id parameters (RFC 9106's second recommended option, with less memory so
// that a small server can verify several sign-ins at once).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024
	argonThreads = 2
	argonKeyLen  = 32
)

// PasswordParams are the argon2id costs of new password hashes; the zero value
// means the defaults above. A hash carries its own parameters, so CheckPassword
// verifies hashes of any cost.
type PasswordParams struct {
	Time    uint32 // passes over the memory
	Memory  uint32 // KiB
	Threads uint8
}

func (p PasswordParams) orDefault() PasswordParams {
	if p == (PasswordParams{}) {
		return PasswordParams{Time: argonTime, Memory: argonMemory, Threads: argonThreads}
	}
	return p
}

// HashPassword returns an argon2id hash in the PHC string format, with the
// default costs.
func HashPassword(password string) (string, error) {
	return hashPassword(PasswordParams{}, password)
}

func hashPassword(p PasswordParams, password string) (string, error) {
	p = p.orDefault()
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("store: hash password: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// CheckPassword reports whether password matches an argon2id hash made by HashPassword.
func CheckPassword(hash, password string) (bool, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errors.New("store: check password: unknown hash format")
	}
	var version int
	var mem, iter uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil {
		return false, fmt.Errorf("store: check password: %w", err)
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iter, &threads); err != nil {
		return false, fmt.Errorf("store: check password: %w", err)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false, fmt.Errorf("store: check password: %w", err)
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return false, fmt.Errorf("store: check password: %w", err)
	}
	got := argon2.IDKey([]byte(password), salt, iter, mem, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
