package steady

import "github.com/coldstart-go/coldstart/record"

// The rows steady writes are defined once, in package record, so that
// reading results (package report) needs none of steady's load, launch or
// cgroup code. These are their names here.
type (
	// Row is one measured step (record.SteadyRow).
	Row = record.SteadyRow
	// RoundStats are a step row's figures over its rounds.
	RoundStats = record.RoundStats
	// Interval is a median's confidence interval over rounds.
	Interval = record.Interval
	// SoakRow is one interval of a soak.
	SoakRow = record.SoakRow
	// SoakSummary is a soak's trends and verdict.
	SoakSummary = record.SoakSummary
	// SoakStop is why a soak that stops on precision ended.
	SoakStop = record.SoakStop
	// Trend is the slope of one soak metric over time.
	Trend = record.Trend
	// Protocol is how the load reaches the server.
	Protocol = record.Protocol
	// Scenario names one kind of step.
	Scenario = record.Scenario
	// Client is the gRPC client library a gRPC step uses.
	Client = record.Client
)

// Why a soak that stops on precision ended (SoakStop.Reason).
const (
	SoakStopPrecision   = record.SoakStopPrecision
	SoakStopMaxSoak     = record.SoakStopMaxSoak
	SoakStopInterrupted = record.SoakStopInterrupted
	SoakStopFailed      = record.SoakStopFailed
)
