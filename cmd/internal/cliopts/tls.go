package cliopts

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coldstart-go/coldstart/prober"
)

// TLS are the TLS client flags coldstart's probes and steady's load take
// alike: --tls, --cacert, --tls-server-name, --insecure-skip-verify,
// --cert and --key, the inputs of prober.LoadTLS.
type TLS struct {
	On                 bool
	CACert             string
	ServerName         string
	InsecureSkipVerify bool
	Cert, Key          string
}

// Bind adds the flags to cmd: tlsHelp says what --tls does there, and
// nameDefault what --tls-server-name is when not given.
func (t *TLS) Bind(cmd *cobra.Command, tlsHelp, nameDefault string) {
	f := cmd.Flags()
	f.BoolVar(&t.On, "tls", false, tlsHelp)
	f.StringVar(&t.CACert, "cacert", "", "with TLS: verify the server's certificate against the CAs in this PEM file (\"\" = the system's roots)")
	f.StringVar(&t.ServerName, "tls-server-name", "", "with TLS: the name sent and verified (\"\" = "+nameDefault+")")
	f.BoolVar(&t.InsecureSkipVerify, "insecure-skip-verify", false, "with TLS: do not verify the server's certificate (recorded, and the figures labelled unverified)")
	f.StringVar(&t.Cert, "cert", "", "with TLS: the client certificate, PEM, for servers that require one (mTLS; with --key)")
	f.StringVar(&t.Key, "key", "", "with TLS: the client certificate's PEM private key (only its path is recorded)")
	cmd.MarkFlagsMutuallyExclusive("cacert", "insecure-skip-verify")
}

// Load loads the flags' files when TLS is on, by --tls or because implied
// (a grpcs://, https:// or h3:// URL, which impliedBy names); nil when it is off.
// A TLS flag given with TLS off is an error naming it. Load's own errors
// are prober.OptionErrors, which name the input at fault.
func (t *TLS) Load(implied bool, impliedBy string) (*prober.TLS, error) {
	if !t.On && !implied {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--cacert", t.CACert != ""}, {"--tls-server-name", t.ServerName != ""}, {"--insecure-skip-verify", t.InsecureSkipVerify}, {"--cert", t.Cert != ""}, {"--key", t.Key != ""}} {
			if f.set {
				return nil, fmt.Errorf("%s: only with TLS (--tls, or %s)", f.name, impliedBy)
			}
		}
		return nil, nil
	}
	return prober.LoadTLS(prober.TLSOptions{
		CAFile: t.CACert, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify,
		CertFile: t.Cert, KeyFile: t.Key,
	})
}
