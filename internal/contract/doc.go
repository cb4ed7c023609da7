// Package contract is the single source of the workload every protobench server serves: the
// payload bytes, the user records and the arithmetic, so that every Go server returns identical
// bytes whatever its protocol, and every client can check what it got back.
package contract

// The generated code in benchpb is committed so that `go run ./servers/grpc` needs no protoc;
// `protobench generate --check` (part of ./run.sh test) fails when it no longer matches the proto.
