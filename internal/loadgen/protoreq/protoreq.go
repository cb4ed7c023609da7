// Package protoreq turns a user's gRPC call, given as a .proto file, a method and a JSON body,
// into the method path and request bytes the gRPC driver sends, so that a server of the user's
// own can be driven without generated code.
package protoreq

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Call is a unary call ready to send.
type Call struct {
	Path    string // /package.Service/Method, as on the wire
	Request []byte // the request message, protobuf-encoded
	// Input and Output name the method's message types.
	Input, Output protoreflect.FullName
}

// Build compiles protoFile, finds method ("package.Service/Method") in it and encodes body, the
// request in protobuf's JSON mapping, as the method's input message. Imports resolve against
// the file's own folder first, then importPaths, then protobuf's well-known types. A body that
// starts with @ names a file that holds the JSON; an empty body is the empty message.
func Build(protoFile, method, body string, importPaths ...string) (*Call, error) {
	files, err := compile(protoFile, importPaths)
	if err != nil {
		return nil, err
	}
	md, err := findMethod(files, protoFile, method)
	if err != nil {
		return nil, err
	}
	data, source, err := readBody(body)
	if err != nil {
		return nil, err
	}
	msg := dynamicpb.NewMessage(md.Input())
	if strings.TrimSpace(string(data)) != "" {
		opts := protojson.UnmarshalOptions{Resolver: files.AsResolver()}
		if err := opts.Unmarshal(data, msg); err != nil {
			return nil, fmt.Errorf("%s: not a %s in protobuf's JSON mapping: %v", source, md.Input().FullName(), err)
		}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("%s: encode %s: %v", source, md.Input().FullName(), err)
	}
	return &Call{
		Path:    "/" + string(md.Parent().FullName()) + "/" + string(md.Name()),
		Request: b,
		Input:   md.Input().FullName(),
		Output:  md.Output().FullName(),
	}, nil
}

// compile parses and links protoFile and everything it imports.
func compile(protoFile string, importPaths []string) (linker.Files, error) {
	if protoFile == "" {
		return nil, errors.New("--grpc-proto: no .proto file given")
	}
	if _, err := os.Stat(protoFile); err != nil {
		return nil, fmt.Errorf("--grpc-proto %s: %w", protoFile, err)
	}
	dir, name := filepath.Split(protoFile)
	if dir == "" {
		dir = "."
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: append([]string{dir}, importPaths...)}),
	}
	files, err := c.Compile(context.Background(), name)
	if err != nil {
		// The compiler's errors already say file:line:column and what it expected.
		return nil, fmt.Errorf("--grpc-proto %s: %v", protoFile, err)
	}
	return files, nil
}

// findMethod looks method up among the services of the compiled files and their imports.
func findMethod(files linker.Files, protoFile, method string) (protoreflect.MethodDescriptor, error) {
	svcName, mName, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !ok || svcName == "" || mName == "" || strings.Contains(mName, "/") {
		return nil, fmt.Errorf("--grpc-call %q: want package.Service/Method", method)
	}
	d, err := files.AsResolver().FindDescriptorByName(protoreflect.FullName(svcName))
	sd, isService := d.(protoreflect.ServiceDescriptor)
	if err != nil || !isService {
		return nil, fmt.Errorf("--grpc-call %q: %s has no service %s (it has: %s)", method, protoFile, svcName, strings.Join(services(files), ", "))
	}
	md := sd.Methods().ByName(protoreflect.Name(mName))
	if md == nil {
		var names []string
		for i := range sd.Methods().Len() {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		return nil, fmt.Errorf("--grpc-call %q: service %s has no method %s (it has: %s)", method, svcName, mName, strings.Join(names, ", "))
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, fmt.Errorf("--grpc-call %q: a streaming method; only unary methods can be driven from a JSON body", method)
	}
	return md, nil
}

// services lists the services the compiled files declare, for an error message.
func services(files linker.Files) []string {
	var out []string
	for _, f := range files {
		for i := range f.Services().Len() {
			out = append(out, string(f.Services().Get(i).FullName()))
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// readBody returns the JSON body and how to name it in an error.
func readBody(body string) ([]byte, string, error) {
	if file, ok := strings.CutPrefix(body, "@"); ok {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("--grpc-data @%s: %w", file, err)
		}
		return b, "--grpc-data @" + file, nil
	}
	return []byte(body), "--grpc-data", nil
}

// Flags are the command-line form of a Call: --grpc-proto, --grpc-call, --grpc-data and
// --grpc-import-path.
type Flags struct {
	Proto       string
	Method      string
	Data        string
	ImportPaths []string
}

// DeclareFlags declares the flags on fs.
func DeclareFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Proto, "grpc-proto", "", "grpc: a .proto file that declares --grpc-call, for a server of your own (with --grpc-call and --grpc-data)")
	fs.StringVar(&f.Method, "grpc-call", "", "grpc: the unary method to call, package.Service/Method, from --grpc-proto")
	fs.StringVar(&f.Data, "grpc-data", "", "grpc: the request in protobuf's JSON mapping, or @file (default: the empty message)")
	fs.Func("grpc-import-path", "grpc: a folder where --grpc-proto's imports are found (repeatable; the file's own folder is searched first)", func(s string) error {
		f.ImportPaths = append(f.ImportPaths, s)
		return nil
	})
	return f
}

// Call builds the call the flags describe, or returns nil when none of them was given.
func (f *Flags) Call() (*Call, error) {
	switch {
	case f.Proto == "" && f.Method == "" && f.Data == "" && len(f.ImportPaths) == 0:
		return nil, nil
	case f.Proto == "":
		return nil, errors.New("--grpc-call, --grpc-data and --grpc-import-path need --grpc-proto, the .proto file that declares the method")
	case f.Method == "":
		return nil, fmt.Errorf("--grpc-proto %s: --grpc-call is required (package.Service/Method)", f.Proto)
	}
	return Build(f.Proto, f.Method, f.Data, f.ImportPaths...)
}
