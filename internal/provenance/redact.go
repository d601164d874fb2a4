package provenance

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Redacted stands for a secret value in anything coldstart writes: results,
// reports and -v output.
const Redacted = "<redacted>"

// HashSecretsFlag, on a command line, asks that each redacted value be
// followed by a keyed hash of it ("<redacted:hmac-1a2b3c4d5e6f>"), so that
// runs with different secrets can be told apart. The key is this machine's
// (see hashKey): a hash cannot be checked against a guessed value without
// it, and hashes from two machines do not compare.
const HashSecretsFlag = "--hash-secrets"

// SecretRequestFlag marks the --probe-request body as a secret: it is then
// redacted like an --env value.
const SecretRequestFlag = "--secret-request"

// secretName matches flag and variable names that hold secrets by their
// name, in a server's own arguments: --api-key=..., --db-password ...
var secretName = regexp.MustCompile(`(?i)(token|secret|passw(or)?d|api[-_]?key|credential|private[-_]?key)`)

// userinfo matches the password part of a URL's user information.
var userinfo = regexp.MustCompile(`(://[^/@:\s]*):[^/@\s]*@`)

// RedactArgs returns a copy of a command line with every secret value
// replaced by Redacted: the value of each --env K=V (K kept), of each
// gRPC metadata pair (--metadata or -m K=V, --probe-metadata K=V: K kept;
// metadata carries credentials such as authorization), the
// --probe-request body when --secret-request is given, the value of any
// --NAME=VALUE or "--NAME VALUE" whose name says it is a secret (token,
// secret, password, api-key, credential, private-key), and a password in a URL
// (scheme://user:PASSWORD@host). With --hash-secrets each is followed by a
// keyed hash.
func RedactArgs(args []string) []string {
	hash, secretBody := false, false
	for _, a := range args {
		if a == "--" {
			break // the server's own arguments
		}
		switch a {
		case HashSecretsFlag, HashSecretsFlag + "=true":
			hash = true
		case SecretRequestFlag, SecretRequestFlag + "=true":
			secretBody = true
		}
	}
	r := redactor{hash: hash}
	out := make([]string, len(args))
	ours := true // before "--": coldstart's own flags, -m among them
	for i := 0; i < len(args); i++ {
		a := args[i]
		out[i] = r.url(a)
		if a == "--" {
			ours = false
		}
		name, value, inline := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "-") {
			continue
		}
		var redact func(string) string
		always := false // the flag takes the next argument whatever it looks like
		if ours && strings.HasPrefix(name, "-m") && len(name) > 2 && !strings.HasPrefix(name, "--") {
			out[i] = "-m" + r.env(a[2:]) // -mKEY=VALUE, pflag's joined short form
			continue
		}
		switch {
		case name == "--env", name == "--metadata", name == "--probe-metadata", ours && name == "-m":
			redact, always = r.env, true
		case name == "--probe-request" && secretBody:
			redact, always = r.value, true
			redact = r.value
		case secretName.MatchString(name) && name != SecretRequestFlag && name != HashSecretsFlag:
			redact = r.value
		default:
			continue
		}
		switch {
		case inline:
			out[i] = name + "=" + redact(value)
		case i+1 < len(args) && (always || !strings.HasPrefix(args[i+1], "-")):
			out[i+1] = redact(args[i+1])
			i++
		}
	}
	return out
}

// RedactEnv returns "KEY=<redacted>" for "KEY=VALUE" (with --hash-secrets
// on this process's command line, a keyed hash follows): for -v output of
// a server's environment.
func RedactEnv(kv string) string {
	r := redactor{hash: hashRequested()}
	return r.env(kv)
}

func hashRequested() bool {
	for _, a := range os.Args[1:] {
		if a == "--" {
			return false
		}
		if a == HashSecretsFlag || a == HashSecretsFlag+"=true" {
			return true
		}
	}
	return false
}

type redactor struct{ hash bool }

func (r redactor) value(v string) string {
	if strings.HasPrefix(v, Redacted[:len(Redacted)-1]) {
		return v // already redacted: an older file read again
	}
	if !r.hash {
		return Redacted
	}
	return "<redacted:" + Hash(v) + ">"
}

func (r redactor) env(kv string) string {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return kv // not K=V: a usage error names it, nothing to hide
	}
	return k + "=" + r.value(v)
}

func (r redactor) url(a string) string {
	return userinfo.ReplaceAllStringFunc(a, func(m string) string {
		sub := userinfo.FindStringSubmatch(m)
		return sub[1] + ":" + r.value(strings.TrimSuffix(m[len(sub[1])+1:], "@")) + "@"
	})
}

// Hash is a short keyed hash of a secret value ("hmac-" and 12 hex
// digits), keyed by this machine's key.
func Hash(v string) string {
	m := hmac.New(sha256.New, hashKey())
	m.Write([]byte(v))
	return "hmac-" + hex.EncodeToString(m.Sum(nil))[:12]
}

var (
	keyOnce sync.Once
	key     []byte
)

// hashKey is a random key kept in the user's cache directory
// (coldstart/redact.key, mode 0600), made on first use. Without a cache
// directory it lives for this process only.
func hashKey() []byte {
	keyOnce.Do(func() {
		dir, err := os.UserCacheDir()
		if err == nil {
			path := filepath.Join(dir, "coldstart", "redact.key")
			if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
				key = b
				return
			}
			b := make([]byte, 32)
			rand.Read(b)
			if os.MkdirAll(filepath.Dir(path), 0o700) == nil {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
				if err == nil {
					_, werr := f.Write(b)
					if cerr := f.Close(); werr == nil && cerr == nil {
						key = b
						return
					}
				} else if errors.Is(err, os.ErrExist) {
					if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
						key = b
						return
					}
				}
			}
		}
		key = make([]byte, 32)
		rand.Read(key)
	})
	return key
}
