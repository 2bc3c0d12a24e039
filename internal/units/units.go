// Package units formats quantities for people.
package units

import "fmt"

// Bytes formats a byte count with binary (IEC) prefixes: "512 B",
// "1.5 KiB", "3.0 GiB". Below 1 KiB the count is exact; above, one decimal
// (so 1 MiB − 1 B prints as "1024.0 KiB").
func Bytes[N ~int | ~int64 | ~uint64](n N) string {
	sign, mag := "", uint64(n)
	if n < 0 {
		// -MinInt64 wraps to MinInt64, whose uint64 is its magnitude.
		sign, mag = "-", uint64(-int64(n))
	}
	const unit = 1024
	if mag < unit {
		return fmt.Sprintf("%s%d B", sign, mag)
	}
	div, exp := uint64(unit), 0
	for m := mag / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%s%.1f %ciB", sign, float64(mag)/float64(div), "KMGTPE"[exp])
}
