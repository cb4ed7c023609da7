package scenario

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// CustomTarget is a server of the user's own, declared in the scenario's custom_targets: it runs
// in the same capped, pinned container as the reference servers and is driven by every tool that
// speaks its protocol.
type CustomTarget struct {
	targets.Target
	// ImageRef is an image the user has; Dockerfile (absolute, resolved from the scenario file's
	// folder) is one the suite builds, with the Dockerfile's folder as the build context.
	ImageRef   string
	Dockerfile string
	// Environment is given to the server's container as is.
	Environment map[string]string
	// Request is the call every tool sends, for gRPC and HTTP targets that do not serve the
	// workload contract; nil when the target serves the contract.
	Request *Request
	// GoRuntime says the server is a Go program (go_runtime: true): on an engine without
	// cpusets (swarm) it gets GOMAXPROCS equal to its CPU limit rounded up, as our Go servers
	// do, unless its environment sets GOMAXPROCS itself.
	GoRuntime bool
	Line      int
}

// Request is the one call a custom gRPC or HTTP target is measured with.
type Request struct {
	// gRPC: the proto file (absolute), the full method package.Service/Method and the request
	// message in protobuf's JSON mapping.
	ProtoFile string
	Call      string
	Data      string
	// HTTP: method, path, headers ("Name: value") and body.
	HTTPMethod  string
	HTTPPath    string
	HTTPHeaders []string
	HTTPBody    string
}

// customName: the same rule as compose service names, which custom targets become.
var customName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,47}$`)

var grpcCall = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*\.[A-Za-z_][A-Za-z0-9_]*/[A-Za-z_][A-Za-z0-9_]*$`)

// Target resolves a target name: the scenario's own custom targets first, then the registry.
func (s *Scenario) Target(name string) (targets.Target, bool) {
	if c, ok := s.Custom[name]; ok {
		return c.Target, true
	}
	return targets.Lookup(name)
}

// targetNames lists every target the scenario may name: the registry's, then its own.
func (s *Scenario) targetNames() []string {
	names := targets.Names()
	for _, n := range sortedKeys(s.Custom) {
		names = append(names, n)
	}
	return names
}

// contractLike is the registry target whose contract a custom target of protocol serves.
func contractLike(protocol string) (targets.Target, bool) {
	for _, t := range targets.All() {
		if t.Protocol == protocol {
			return t, true
		}
	}
	return targets.Target{}, false
}

// decodeCustomTargets reads custom_targets: a mapping from a new target name to its server.
func (d *decoder) decodeCustomTargets(n *yaml.Node, field string, sc *Scenario) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.add(n.Line, field, "expected a mapping from target name to its server, got %s", describe(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		f := join(field, fieldKey(k.Value))
		switch {
		case !customName.MatchString(k.Value):
			d.add(k.Line, f, "expected a target name of lower-case letters, digits, - and _, got %q", clip(k.Value))
			continue
		case slices.Contains(targets.Names(), k.Value):
			d.add(k.Line, f, "%q is a reference target; give yours another name", k.Value)
			continue
		case slices.Contains(reservedServices, k.Value):
			d.add(k.Line, f, "%q is a service of protobench's stack; give yours another name", k.Value)
			continue
		case sc.Custom[k.Value] != nil:
			d.add(k.Line, f, "target %q declared twice", k.Value)
			continue
		}
		if c := d.decodeCustom(k.Value, v, f, sc.Path); c != nil {
			sc.Custom[k.Value] = c
		}
	}
}

// reservedServices are the compose services a custom target must not replace: the
// observability stack and every tool's service.
var reservedServices = append([]string{"prometheus", "cadvisor", "node-exporter", "grafana"}, toolServices()...)

func toolServices() []string {
	var out []string
	for _, n := range tool.Names() {
		a, _ := tool.Lookup(n)
		if !slices.Contains(out, a.Service()) {
			out = append(out, a.Service())
		}
	}
	return out
}

// decodeCustom reads one custom target. Its request blocks (grpc, http) are decoded last, once
// the protocol they must match is known.
func (d *decoder) decodeCustom(name string, n *yaml.Node, field, scenarioPath string) *CustomTarget {
	c := &CustomTarget{Line: lineOf(n), Target: targets.Target{Name: name, Caps: targets.DefaultCaps, HealthRetries: 60}}
	relative := func(v *yaml.Node, f string) (string, bool) { return d.scenarioFile(v, f, scenarioPath) }
	var grpcNode, httpNode *yaml.Node
	handlers := d.customKeys(c, relative)
	handlers["grpc"] = func(v *yaml.Node, f string) { grpcNode = v }
	handlers["http"] = func(v *yaml.Node, f string) { httpNode = v }
	seen := d.mapping(n, field, handlers)
	if seen == nil {
		return nil
	}
	d.require(n, field, seen, "protocol", "port")
	d.checkCustomImage(c, field, seen)
	if grpcNode != nil && c.Protocol != targets.GRPC {
		d.add(lineOf(grpcNode), join(field, "grpc"), "applies to protocol grpc only")
		grpcNode = nil
	}
	if httpNode != nil && c.Protocol != targets.HTTP {
		d.add(lineOf(httpNode), join(field, "http"), "applies to protocol http only")
		httpNode = nil
	}
	like, ok := contractLike(c.Protocol)
	if !ok {
		return nil
	}
	// Without a request of its own, the target serves our contract, as its reference servers do.
	c.Methods, c.Patterns, c.HTTPVersions, c.Encodings = like.Methods, like.Patterns, like.HTTPVersions, like.Encodings
	// Its client is ours, so it takes our client's knobs (a ZeroMQ target's pattern); the server
	// knobs are our servers' own.
	c.Knobs = like.ClientKnobs()
	if grpcNode != nil {
		c.Request = d.decodeGRPCRequest(grpcNode, join(field, "grpc"), relative)
	}
	if httpNode != nil {
		c.Request = d.decodeHTTPRequest(httpNode, join(field, "http"))
	}
	if c.Request != nil {
		c.useOwnRequest()
	}
	return c
}

// customKeys are the handlers of a custom target's scalar and list keys, filling c.
func (d *decoder) customKeys(c *CustomTarget, relative func(*yaml.Node, string) (string, bool)) map[string]keyHandler {
	port := func(dst *int) keyHandler {
		return func(v *yaml.Node, f string) {
			x, _ := d.integer(v, f, 1, 65535)
			*dst = int(x)
		}
	}
	return map[string]keyHandler{
		"image":      func(v *yaml.Node, f string) { c.ImageRef, _ = d.str(v, f) },
		"dockerfile": func(v *yaml.Node, f string) { c.Dockerfile, _ = relative(v, f) },
		"protocol": func(v *yaml.Node, f string) {
			if s, ok := d.str(v, f); ok {
				if !slices.Contains(targets.Protocols, s) {
					d.add(lineOf(v), f, "unknown protocol %q; expected one of %s", clip(s), strings.Join(targets.Protocols, ", "))
					return
				}
				c.Protocol = s
			}
		},
		"port":         port(&c.Port),
		"metrics_port": port(&c.MetricsPort),
		"health_check": func(v *yaml.Node, f string) {
			d.list(v, f, func(item *yaml.Node, f string) {
				if s, ok := d.str(item, f); ok {
					c.Health = append(c.Health, s)
				}
			})
		},
		"environment": func(v *yaml.Node, f string) { c.Environment = d.decodeEnvironment(v, f) },
		"go_runtime":  func(v *yaml.Node, f string) { c.GoRuntime, _ = d.boolean(v, f) },
	}
}

// scenarioFile reads a path relative to the scenario file's folder and makes it absolute; it
// must name a file that exists.
func (d *decoder) scenarioFile(v *yaml.Node, f, scenarioPath string) (string, bool) {
	s, ok := d.str(v, f)
	if !ok {
		return "", false
	}
	p := s
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(scenarioPath), p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		d.add(lineOf(v), f, "expected a file (relative to the scenario file's folder), but %s is not one", p)
		return "", false
	}
	return p, true
}

// checkCustomImage requires exactly one of image and dockerfile. A dockerfile key that failed
// to resolve still counts as given, so its own error is the only one.
func (d *decoder) checkCustomImage(c *CustomTarget, field string, seen map[string]*yaml.Node) {
	switch {
	case c.ImageRef == "" && c.Dockerfile == "" && seen["dockerfile"] == nil:
		d.add(c.Line, field, "give image (one you have) or dockerfile (one the suite builds)")
	case c.ImageRef != "" && seen["dockerfile"] != nil:
		d.add(seen["dockerfile"].Line, join(field, "dockerfile"), "give image or dockerfile, not both")
	}
}

// useOwnRequest makes the target's one method its request's: the request is sent as declared,
// so no version or encoding variants of it.
func (c *CustomTarget) useOwnRequest() {
	c.Methods = []string{c.Request.MethodName()}
	if len(c.HTTPVersions) > 0 {
		c.HTTPVersions = c.HTTPVersions[:1]
	}
	c.Encodings = nil
}

func (d *decoder) decodeGRPCRequest(n *yaml.Node, field string, file func(*yaml.Node, string) (string, bool)) *Request {
	r := &Request{}
	seen := d.mapping(n, field, map[string]keyHandler{
		"proto": func(v *yaml.Node, f string) { r.ProtoFile, _ = file(v, f) },
		"call": func(v *yaml.Node, f string) {
			if s, ok := d.str(v, f); ok {
				if !grpcCall.MatchString(s) {
					d.add(lineOf(v), f, "expected a full method package.Service/Method, got %q", clip(s))
					return
				}
				r.Call = s
			}
		},
		"data": func(v *yaml.Node, f string) { r.Data, _ = d.str(v, f) },
	})
	if seen == nil {
		return nil
	}
	d.require(n, field, seen, "proto", "call")
	if r.Data == "" {
		r.Data = "{}"
	}
	return r
}

func (d *decoder) decodeHTTPRequest(n *yaml.Node, field string) *Request {
	r := &Request{HTTPMethod: http.MethodGet}
	seen := d.mapping(n, field, map[string]keyHandler{
		"method": func(v *yaml.Node, f string) {
			if s, ok := d.str(v, f); ok {
				if s == "" || strings.ToUpper(s) != s || strings.ContainsAny(s, " \t/") {
					d.add(lineOf(v), f, "expected an HTTP method such as GET or POST, got %q", clip(s))
					return
				}
				r.HTTPMethod = s
			}
		},
		"path": func(v *yaml.Node, f string) {
			if s, ok := d.str(v, f); ok {
				if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \t\r\n") {
					d.add(lineOf(v), f, "expected a path starting with / and without spaces, got %q", clip(s))
					return
				}
				r.HTTPPath = s
			}
		},
		"headers": func(v *yaml.Node, f string) {
			d.list(v, f, func(item *yaml.Node, f string) {
				s, ok := d.str(item, f)
				if !ok {
					return
				}
				k, _, found := strings.Cut(s, ":")
				if !found || strings.TrimSpace(k) == "" || strings.ContainsAny(s, "\r\n") {
					d.add(lineOf(item), f, "expected a header \"Name: value\", got %q", clip(s))
					return
				}
				r.HTTPHeaders = append(r.HTTPHeaders, s)
			})
		},
		"body": func(v *yaml.Node, f string) { r.HTTPBody, _ = d.str(v, f) },
	})
	if seen == nil {
		return nil
	}
	d.require(n, field, seen, "path")
	return r
}

// MethodName is the method name the custom request stands for in steps and records: the gRPC
// method, or for HTTP the method and the path's last segment ("POST /v1/orders/lookup" gives
// POST_lookup).
func (r *Request) MethodName() string {
	if r.Call != "" {
		return r.Call[strings.LastIndexByte(r.Call, '/')+1:]
	}
	seg, _, _ := strings.Cut(r.HTTPPath, "?")
	seg = strings.Trim(seg, "/")
	if i := strings.LastIndexByte(seg, '/'); i >= 0 {
		seg = seg[i+1:]
	}
	if seg == "" {
		return r.HTTPMethod
	}
	return r.HTTPMethod + "_" + seg
}
