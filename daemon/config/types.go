package config

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("10m", "6h").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`must be a duration string like "10m" or "6h", got %s`, b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`must be a duration like "10m" or "6h", got %q`, s)
	}
	*d = Duration(v)
	return nil
}

// ByteSize is a byte count written as a number or a string with a unit
// ("4GiB", "512MB", "10MiB"): KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB
// powers of 1024.
type ByteSize uint64

var byteUnits = []struct {
	suffix string
	mult   uint64
}{ // longest suffixes first so "GiB" is not read as "B"
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseByteSize reads "4GiB", "1.5GB", "1048576".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f*float64(mult) >= 1<<63 {
		return 0, fmt.Errorf(`must be a size like "4GiB", "512MB" or a byte count, got %q`, s)
	}
	return ByteSize(f * float64(mult)), nil
}

func (b ByteSize) String() string {
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if uint64(b) >= u.mult && uint64(b)%u.mult == 0 {
			return fmt.Sprintf("%d%s", uint64(b)/u.mult, u.suffix)
		}
	}
	return strconv.FormatUint(uint64(b), 10)
}

func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var n json.Number
		if json.Unmarshal(data, &n) != nil {
			return fmt.Errorf(`must be a size like "4GiB" or a byte count, got %s`, data)
		}
		s = n.String()
	}
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Window is a daily local-time window "HH:MM-HH:MM" in which automatic
// updates may download and switch; empty means any time. A window may cross
// midnight ("23:00-05:00").
type Window struct {
	Start, End int // minutes after midnight
	Set        bool
}

// ParseWindow reads "HH:MM-HH:MM" (or "" for any time).
func ParseWindow(s string) (Window, error) {
	if s == "" {
		return Window{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	start, err1 := parseClock(a)
	end, err2 := parseClock(b)
	if !ok || err1 != nil || err2 != nil || start == end {
		return Window{}, fmt.Errorf(`must be "HH:MM-HH:MM" (24-hour local time, start != end) or "", got %q`, s)
	}
	return Window{Start: start, End: end, Set: true}, nil
}

func parseClock(s string) (int, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || len(m) != 2 || err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return 0, fmt.Errorf("bad clock %q", s)
	}
	return hh*60 + mm, nil
}

// Contains reports whether t (in its own location) falls inside the window.
func (w Window) Contains(t time.Time) bool {
	if !w.Set {
		return true
	}
	m := t.Hour()*60 + t.Minute()
	if w.Start < w.End {
		return m >= w.Start && m < w.End
	}
	return m >= w.Start || m < w.End // crosses midnight
}

func (w Window) String() string {
	if !w.Set {
		return ""
	}
	return fmt.Sprintf("%02d:%02d-%02d:%02d", w.Start/60, w.Start%60, w.End/60, w.End%60)
}

func (w Window) MarshalJSON() ([]byte, error) { return json.Marshal(w.String()) }

func (w *Window) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf(`must be a string "HH:MM-HH:MM" or "", got %s`, data)
	}
	v, err := ParseWindow(s)
	if err != nil {
		return err
	}
	*w = v
	return nil
}
