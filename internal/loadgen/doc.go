// Package loadgen is protobench's own load generator: one engine for every protocol, so that the
// comparison between protocols measures the protocols and not the clients.
//
// The engine knows nothing about any protocol. A Driver, registered by URL scheme, opens
// connections; each connection hands out Workers (one request at a time per goroutine) or runs
// itself as a Pipeliner (many requests in flight on one socket that only one goroutine may use).
// The engine stamps every request with its intended, start and end times, records latency from
// the intended time (corrected for coordinated omission) and service time from the start, into
// one HdrHistogram per worker that is merged at the end. Memory stays flat however long the run:
// nothing is kept per request.
//
// The closed model keeps connections × concurrency requests in flight back to back. The open
// model sends on the schedule of a Pacer (constant, steps, linear ramp) whatever the server does,
// and flags the result rate-not-met when it could not keep up instead of quietly slowing down.
package loadgen
