package contract

import (
	"errors"
	"fmt"
)

// Method names shared by every protocol. Servers expose them under these names (gRPC method,
// net/rpc "Bench.<name>", ZeroMQ method frame) and load generators select them by these names.
const (
	MethodEcho       = "Echo"
	MethodGetUser    = "GetUser"
	MethodMultiply   = "Multiply"
	MethodDivide     = "Divide"
	MethodEchoStream = "EchoStream"
)

// Methods lists every method of the contract, unary ones first.
var Methods = []string{MethodEcho, MethodGetUser, MethodMultiply, MethodDivide, MethodEchoStream}

// DefaultMaxPayloadBytes is the largest Echo payload a server accepts unless configured otherwise.
// It is 16 MiB so that seed 001's 10 MB payload fits with room for framing.
const DefaultMaxPayloadBytes = 16 << 20

// Request parameters every client sends (our generator's drivers and the ghz, wrk and k6
// adapters), so that every tool makes every server do the same work.
const (
	RequestUserID = 42      // GetUser's id
	RequestA      = 1234567 // Multiply's and Divide's a
	RequestB      = 89      // and b
)

// ErrDivideByZero is what Divide reports for b == 0; every protocol maps it to its own error.
var ErrDivideByZero = errors.New("division by zero")

// Payload returns n deterministic bytes. A repeating printable pattern keeps the bytes identical on
// every protocol while still being compressible the way real text is (which matters for gzip).
func Payload(n int) []byte {
	const pattern = "protobench-payload-0123456789abcdefghijklmnopqrstuvwxyz\n"
	b := make([]byte, n)
	for i := 0; i < n; i += len(pattern) {
		copy(b[i:], pattern)
	}
	return b
}

// User is the record GetUser returns: seed 003's {name, age}, plus id and email.
type User struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Age   int32  `json:"age"`
}

// UserByID builds the record for id. It is computed, not looked up, so every server does the
// same small amount of work and no server benefits from a warmer cache.
func UserByID(id int64) User {
	name := fmt.Sprintf("user-%d", id)
	return User{
		ID:    id,
		Name:  name,
		Email: name + "@example.com",
		Age:   int32(18 + uint64(id)%63),
	}
}

// Multiply is seed 004's Arith.Multiply.
func Multiply(a, b int64) int64 { return a * b }

// Divide is seed 004's Arith.Divide: quotient and remainder, or ErrDivideByZero.
func Divide(a, b int64) (quotient, remainder int64, err error) {
	if b == 0 {
		return 0, 0, ErrDivideByZero
	}
	return a / b, a % b, nil
}
