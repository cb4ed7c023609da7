package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits maps a lower-cased size suffix to its number of bytes. KB/MB/GB are decimal and
// KiB/MiB/GiB binary, as the IEC names say; the single letters k/m/g are binary because that is
// what Docker's memory limits mean by them.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
}

// maxSize bounds every size so that arithmetic on it cannot overflow (1 PiB is far beyond any
// payload or memory cap a benchmark on one machine can use).
const maxSize = 1 << 50

// ParseSize reads a byte count such as 1024, "1KiB", "10MB" or "512m".
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '_') {
		i++
	}
	num, unit := strings.ReplaceAll(s[:i], "_", ""), strings.ToLower(strings.TrimSpace(s[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	bytes := v * mult
	if math.IsNaN(bytes) || bytes > maxSize || bytes != math.Trunc(bytes) {
		return 0, fmt.Errorf("invalid size %q: not a whole number of bytes up to 1 PiB", s)
	}
	return int64(bytes), nil
}

// FormatSize writes n bytes the short way used in step names and plans: 128B, 1KiB, 10MB.
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dMB", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dKB", n/1e3)
	}
	return fmt.Sprintf("%dB", n)
}

// formatFloat writes a float without a trailing ".0" or exponent for whole numbers.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}
