package prober

import "github.com/coldstart-go/coldstart/record"

// Sample is one probe of one cold start (record.Sample, the row results
// files carry).
type Sample = record.Sample

// Phase is a named timestamp of one cold start, from t0 (record.Phase).
type Phase = record.Phase

// Phase names shared by every launcher, in the order they happen (see
// record.PhaseStarted).
const (
	PhaseStarted   = record.PhaseStarted
	PhaseAccepting = record.PhaseAccepting
	// PhaseTLSHandshake is when a probe's TLS handshake first completed.
	PhaseTLSHandshake = record.PhaseTLSHandshake
	PhaseFirstReply   = record.PhaseFirstReply
	PhaseFirstRPC     = record.PhaseFirstRPC
)
