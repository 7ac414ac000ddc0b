// Package auth authenticates admin API callers by bearer token and says what each role may
// do. Tokens are random and high-entropy, so the configuration keeps only their SHA-256:
// a fast hash is enough, and a leaked configuration does not leak a usable token.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Role is what a token may do; each role may do everything the ones below it may.
type Role string

const (
	// Viewer reads records, jobs, routes, runs, stats and the audit log.
	Viewer Role = "viewer"
	// Operator also replays, discards and retries single records, cancels jobs and
	// pauses, resumes and runs routes.
	Operator Role = "operator"
	// Admin also runs bulk jobs.
	Admin Role = "admin"
)

var rank = map[Role]int{Viewer: 1, Operator: 2, Admin: 3}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return rank[r] > 0 }

// Allows reports whether r may do what needs role need.
func (r Role) Allows(need Role) bool { return rank[r] >= rank[need] }

// Token is one configured token.
type Token struct {
	// Name identifies the caller in logs and the audit log.
	Name string `yaml:"name"`
	// SHA256 is the hex SHA-256 of the token: `dlq-admin token new` makes a token and
	// prints both.
	SHA256 string `yaml:"sha256"`
	// Role is viewer (reads), operator (also single replays, discards, jobs and routes)
	// or admin (also bulk jobs).
	Role Role `yaml:"role"`
	// Topics, when not empty, are the only original topics whose records the token sees.
	Topics []string `yaml:"topics"`
	// Unmask lets the token read a record's masked fields in clear, one audited request at
	// a time, for the records its topics let it see. Unset: admin tokens may, viewer and
	// operator tokens may not.
	Unmask *bool `yaml:"unmask"`
}

// MayUnmask is the token's unmask permission: as configured, else granted to admins.
func (t Token) MayUnmask() bool {
	if t.Unmask != nil {
		return *t.Unmask
	}
	return t.Role == Admin
}

// Principal is an authenticated caller.
type Principal struct {
	Name   string
	Role   Role
	Topics []string
	// Unmask: the token may read masked fields in clear (Token.Unmask).
	Unmask bool
}

// MayUnmask reports whether the principal may read in clear the masked fields of a record
// of original topic.
func (p Principal) MayUnmask(topic string) bool { return p.Unmask && p.Sees(topic) }

// Sees reports whether the principal may see records of original topic.
func (p Principal) Sees(topic string) bool {
	return len(p.Topics) == 0 || slices.Contains(p.Topics, topic)
}

// SeesAll reports whether the principal may see objects that concern every one of topics;
// nil topics stand for any topic, which only a principal without topics sees.
func (p Principal) SeesAll(topics []string) bool {
	if len(p.Topics) == 0 {
		return true
	}
	if topics == nil {
		return false
	}
	for _, t := range topics {
		if !slices.Contains(p.Topics, t) {
			return false
		}
	}
	return true
}

// ErrUnauthenticated: no token, a malformed header or an unknown token.
var ErrUnauthenticated = errors.New("missing or invalid bearer token")

// MinTokenLength is the shortest token Authenticate accepts (`dlq-admin token new` makes
// 47 characters): a short one can be guessed, whatever hash the configuration keeps.
const MinTokenLength = 20

// devTokens are the well-known development tokens of config/admin.example.yaml, for
// `make dev` only.
var devTokens = []string{"dev-viewer-token", "dev-operator-token", "dev-admin-token"}

func isDevHash(sha string) bool {
	for _, t := range devTokens {
		if strings.EqualFold(Hash(t), sha) {
			return true
		}
	}
	return false
}

// Option adjusts an Authenticator.
type Option func(*Authenticator)

// AllowDevTokens accepts the well-known development tokens (short, and published in the
// example configuration): `make dev` only.
func AllowDevTokens(allow bool) Option { return func(a *Authenticator) { a.allowDev = allow } }

// Authenticator checks bearer tokens against the configured hashes.
type Authenticator struct {
	tokens   []Token
	hashes   [][]byte
	allowDev bool
}

// New validates tokens and returns their authenticator. A hash of a development token is
// refused unless AllowDevTokens.
func New(tokens []Token, opts ...Option) (*Authenticator, error) {
	a := &Authenticator{tokens: tokens}
	for _, o := range opts {
		o(a)
	}
	names := map[string]bool{}
	seen := map[string]bool{}
	for i, t := range tokens {
		h, err := hex.DecodeString(t.SHA256)
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("tokens[%d].name: required", i)
		case names[t.Name]:
			return nil, fmt.Errorf("tokens[%d].name: %q is used twice", i, t.Name)
		case err != nil || len(h) != sha256.Size:
			return nil, fmt.Errorf("tokens[%d].sha256: not 64 hex digits (generate with `dlq-admin token new`)", i)
		case seen[strings.ToLower(t.SHA256)]:
			return nil, fmt.Errorf("tokens[%d].sha256: the same token is configured twice", i)
		case !t.Role.Valid():
			return nil, fmt.Errorf("tokens[%d].role: %q is not one of viewer, operator, admin", i, t.Role)
		case !a.allowDev && isDevHash(t.SHA256):
			return nil, fmt.Errorf("tokens[%d].sha256: a well-known development token, for `make dev` only "+
				"(allow_dev_tokens); generate one with `dlq-admin token new`", i)
		}
		names[t.Name], seen[strings.ToLower(t.SHA256)] = true, true
		a.hashes = append(a.hashes, h)
	}
	return a, nil
}

// Authenticate returns the caller an Authorization header value names. Every configured
// hash is compared in constant time, so timing tells nothing about which one was close.
// A token shorter than MinTokenLength or weaker than MinTokenBits is refused even if
// configured (development tokens only pass with AllowDevTokens).
func (a *Authenticator) Authenticate(header string) (Principal, error) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, ErrUnauthenticated
	}
	if err := CheckStrength(token); err != nil && !(a.allowDev && slices.Contains(devTokens, token)) {
		return Principal{}, ErrUnauthenticated
	}
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i, h := range a.hashes {
		if subtle.ConstantTimeCompare(sum[:], h) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, ErrUnauthenticated
	}
	t := a.tokens[found]
	return Principal{Name: t.Name, Role: t.Role, Topics: t.Topics, Unmask: t.MayUnmask()}, nil
}

// Hash is the configuration form of a token.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a random token with 256 bits of entropy.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return "dlq_" + base64.RawURLEncoding.EncodeToString(b[:])
}
