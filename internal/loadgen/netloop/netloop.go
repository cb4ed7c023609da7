// Package netloop is the one event loop of the load generator's lean clients (HTTP/1.1, h2c,
// gRPC, net/rpc and ZeroMQ DEALER, in the closed and the open model): Serve owns non-blocking sockets that Go's
// network poller does not watch, an epoll set, system calls that skip the runtime's bookkeeping,
// and the batching of every request due on a socket into one write; each protocol supplies a
// Session with its framing and bookkeeping only.
//
// Why not goroutines and net.Conn: on one core, a goroutine per connection pays for the
// scheduler, the network poller and the runtime's syscall bookkeeping on every request, which
// made the generator as expensive per request as the server it measures. An event loop, like
// wrk's, spends its time in the kernel's read and write.
package netloop
