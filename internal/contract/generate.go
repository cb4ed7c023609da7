package contract

// The generated code is committed so that `go run ./servers/grpc` works without protoc.
// scripts/check-generated.sh (run by ./run.sh test) regenerates it and fails when it is stale.
//go:generate sh -c "cd ../.. && protoc --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) -I proto --go_out=. --go_opt=module=github.com/protobench/protobench --go-grpc_out=. --go-grpc_opt=module=github.com/protobench/protobench protobench/v1/bench.proto"
