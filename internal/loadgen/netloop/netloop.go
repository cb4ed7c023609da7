// Package netloop holds the pieces of the load generator's event-loop drivers (HTTP/1.1 and
// gRPC in the closed model): non-blocking sockets that Go's network poller does not watch, an
// epoll set, and system calls that skip the runtime's bookkeeping.
//
// Why not goroutines and net.Conn: on one core, a goroutine per connection pays for the
// scheduler, the network poller and the runtime's syscall bookkeeping on every request, which
// made the generator as expensive per request as the server it measures. An event loop, like
// wrk's, spends its time in the kernel's read and write.
package netloop
