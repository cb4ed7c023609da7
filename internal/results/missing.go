package results

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/protobench/protobench/internal/record"
)

// Missing lists the JSON names of the figures a record does not have, so results.json writes
// them as null and results.csv leaves them empty instead of showing a 0 nobody measured. A
// figure is missing where 0 cannot be a measurement: no server CPU in a window of seconds means
// cAdvisor saw nothing (and then no memory, throttling, share of the cap or CPU per request
// either); a failed run that completed no request has no throughput and no latency.
func Missing(r record.Record) []string {
	var m []string
	if r.ServerCPUSeconds == 0 {
		m = append(m, "server_cpu_seconds", "server_cpu_percent_of_cap", "server_mem_max_bytes",
			"server_throttled_seconds", "cpu_us_per_request")
	} else if r.ServerMemMaxBytes == 0 {
		m = append(m, "server_mem_max_bytes")
	}
	if r.ClientCPUPercentOfCap == 0 {
		m = append(m, "client_cpu_percent_of_cap")
	}
	if !r.Valid() && r.Requests == 0 {
		m = append(m, "throughput_rps", "latency_ms")
	}
	return m
}

// marshalRecord is a record's compact JSON with its missing figures as null. Reading it back
// gives 0 for them, as before; the null only tells a reader that nothing was measured.
func marshalRecord(r record.Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	for _, name := range Missing(r) {
		b = nullField(b, name)
	}
	return b, nil
}

// nullField replaces the value of the top-level field name in the compact JSON object b by null.
func nullField(b []byte, name string) []byte {
	key := []byte(strconv.Quote(name) + ":")
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			if depth == 1 && bytes.HasPrefix(b[i:], key) {
				start := i + len(key)
				dec := json.NewDecoder(bytes.NewReader(b[start:]))
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					return b
				}
				end := start + int(dec.InputOffset())
				return append(append(append([]byte{}, b[:start]...), "null"...), b[end:]...)
			}
			// Skip strings whole, so a key inside a string value is never matched.
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return b
}

// marshalRecords is results.json: an indented array of records with missing figures as null.
func marshalRecords(recs []record.Record) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, r := range recs {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, err := marshalRecord(r)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
