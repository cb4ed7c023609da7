package loadgen

import (
	"fmt"
	"slices"
	"strings"
)

// What the registered drivers can do, read from the registry for the help texts of `protobench
// load` and for the generator's tool capabilities (internal/tool/protobenchtool), so that a new
// driver shows in each without a list to edit.

// ChurnSchemes lists the registered schemes whose driver can churn connections (Churner).
func ChurnSchemes() []string {
	return schemesWhere(func(d Driver) bool { _, ok := d.(Churner); return ok })
}

// GzipSchemes lists the registered schemes whose driver compresses under --compression gzip.
func GzipSchemes() []string {
	return schemesWhere(func(d Driver) bool { return d.Info().Gzip })
}

// TLSSchemes lists the registered schemes whose driver speaks TLS.
func TLSSchemes() []string {
	return schemesWhere(func(d Driver) bool { return d.Info().NoTLS == "" })
}

func schemesWhere(keep func(Driver) bool) []string {
	var out []string
	for _, s := range Schemes() {
		if d, ok := Lookup(s); ok && keep(d) {
			out = append(out, s)
		}
	}
	return out
}

// schemeURLs spells schemes as URL prefixes in prose: "grpc://", "grpc:// and http://".
func schemeURLs(schemes []string) string {
	if len(schemes) == 0 {
		return "no registered scheme"
	}
	urls := make([]string, len(schemes))
	for i, s := range schemes {
		urls[i] = s + "://"
	}
	if len(urls) == 1 {
		return urls[0]
	}
	return strings.Join(urls[:len(urls)-1], ", ") + " and " + urls[len(urls)-1]
}

// targetUsage is --target's help: one URL form per registered driver.
func targetUsage() string {
	var forms []string
	for _, s := range Schemes() {
		d, _ := Lookup(s)
		form := s + "://host:port"
		if note := d.Info().TargetNote; note != "" {
			form += " (" + note + ")"
		}
		forms = append(forms, form)
	}
	return "target URL: " + strings.Join(forms, ", ")
}

// methodUsage is --method's help: every registered driver's methods, each one that not every
// driver sends followed by the schemes that do.
func methodUsage() string {
	schemes := Schemes()
	var methods []string
	by := map[string][]string{}
	for _, s := range schemes {
		d, _ := Lookup(s)
		for _, m := range d.Info().Methods {
			if !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
			by[m] = append(by[m], s)
		}
	}
	parts := make([]string, len(methods))
	for i, m := range methods {
		parts[i] = m
		if len(by[m]) < len(schemes) {
			parts[i] = fmt.Sprintf("%s (%s)", m, strings.Join(by[m], ", "))
		}
	}
	return "contract method: " + strings.Join(parts, ", ") +
		"; default GetUser. A mix spreads the connections by weight: Echo:50,GetUser:30,Multiply:20"
}

// targetNames is --target-name's defaults, scheme=name for each registered driver.
func targetNames() string {
	var out []string
	for _, s := range Schemes() {
		d, _ := Lookup(s)
		out = append(out, s+": "+d.Info().TargetName)
	}
	return strings.Join(out, ", ")
}
