package loadgen

import (
	"fmt"
	"strings"
)

// labelFlag is --label key=value, repeatable; keys are AllowedLabels only.
type labelFlag map[string]string

func (l labelFlag) String() string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (l labelFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	allowed := false
	for _, a := range AllowedLabels {
		allowed = allowed || a == k
	}
	if !allowed {
		return fmt.Errorf("label key %q is not one of %s (live-metric labels must stay bounded)", k, strings.Join(AllowedLabels, ", "))
	}
	if _, dup := l[k]; dup {
		return fmt.Errorf("label %q given twice", k)
	}
	l[k] = v
	return nil
}
