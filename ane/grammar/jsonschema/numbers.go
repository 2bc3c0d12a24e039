package jsonschema

import (
	"math"
	"strconv"
	"strings"
)

// Integer and decimal ranges are written as regular expressions over
// digits (exact, with no leading zeros and no exponent), then compiled
// like patterns.

// bound is one end of a range: inf means unbounded.
type bound struct {
	v   int64
	inf bool
}

// natRange is the regex of the naturals in lo…hi (hi.inf: unbounded), or
// "" when the range is empty.
func natRange(lo int64, hi bound) string {
	if lo < 0 {
		lo = 0
	}
	if !hi.inf && hi.v < lo {
		return ""
	}
	var alts []string
	ls := strconv.FormatInt(lo, 10)
	if hi.inf {
		top := strings.Repeat("9", len(ls))
		alts = append(alts, sameLenRanges(lo, mustAtoi(top))...)
		alts = append(alts, "[1-9][0-9]{"+strconv.Itoa(len(ls))+"}[0-9]*")
	} else {
		alts = append(alts, sameLenRanges(lo, hi.v)...)
	}
	return "(?:" + strings.Join(alts, "|") + ")"
}

func mustAtoi(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

// sameLenRanges splits lo…hi into ranges of equal digit count.
func sameLenRanges(lo, hi int64) []string {
	var out []string
	for lo <= hi {
		ls := strconv.FormatInt(lo, 10)
		top := int64(math.MaxInt64)
		if len(ls) < 19 {
			top = mustAtoi(strings.Repeat("9", len(ls)))
		}
		end := min(hi, top)
		out = append(out, digitRange(ls, strconv.FormatInt(end, 10)))
		if end == math.MaxInt64 {
			break
		}
		lo = end + 1
	}
	return out
}

// digitRange is the regex of the numbers x…y written with len(x) digits.
func digitRange(x, y string) string {
	if x == y {
		return x
	}
	if len(x) == 1 {
		return "[" + x + "-" + y + "]"
	}
	if x[0] == y[0] {
		return x[:1] + "(?:" + digitRange(x[1:], y[1:]) + ")"
	}
	n := len(x) - 1
	if strings.Trim(x[1:], "0") == "" && strings.Trim(y[1:], "9") == "" {
		return "[" + x[:1] + "-" + y[:1] + "][0-9]{" + strconv.Itoa(n) + "}"
	}
	var alts []string
	alts = append(alts, x[:1]+"(?:"+digitRange(x[1:], strings.Repeat("9", n))+")")
	if x[0]+1 <= y[0]-1 {
		alts = append(alts, "["+string(x[0]+1)+"-"+string(y[0]-1)+"][0-9]{"+strconv.Itoa(n)+"}")
	}
	alts = append(alts, y[:1]+"(?:"+digitRange(strings.Repeat("0", n), y[1:])+")")
	return "(?:" + strings.Join(alts, "|") + ")"
}

// intRange is the regex of the integers in lo…hi, "" when empty.
func intRange(lo, hi bound) string {
	var alts []string
	// Negative: -n for n in max(1, -hi) … -lo.
	if lo.inf || lo.v < 0 {
		nlo := int64(1)
		if !hi.inf && hi.v < -1 {
			nlo = -hi.v
		}
		nhi := bound{inf: true}
		if !lo.inf {
			nhi = bound{v: -lo.v}
		}
		if r := natRange(nlo, nhi); r != "" && (hi.inf || hi.v <= -1 || nlo == 1) {
			alts = append(alts, "-"+r)
		}
	}
	if (lo.inf || lo.v <= 0) && (hi.inf || hi.v >= 0) {
		alts = append(alts, "0")
	}
	if hi.inf || hi.v >= 1 {
		plo := int64(1)
		if !lo.inf && lo.v > 1 {
			plo = lo.v
		}
		if r := natRange(plo, hi); r != "" {
			alts = append(alts, r)
		}
	}
	if len(alts) == 0 {
		return ""
	}
	return "(?:" + strings.Join(alts, "|") + ")"
}

// numberRange is the regex of decimals (no exponent) in the interval with
// integer ends lo, hi; loEx/hiEx make an end exclusive.
func numberRange(lo, hi bound, loEx, hiEx bool) string {
	// Integral values, optionally written with a zero fraction.
	ilo, ihi := lo, hi
	if loEx && !ilo.inf {
		ilo.v++
	}
	if hiEx && !ihi.inf {
		ihi.v--
	}
	var alts []string
	if r := intRange(ilo, ihi); r != "" {
		alts = append(alts, r+`(?:\.0+)?`)
	}
	const frac = `\.[0-9]*[1-9][0-9]*`
	// Positive p.f (p ≥ 0, f ≠ 0) lies in (p, p+1): p ≥ lo and p+1 ≤ hi.
	plo := int64(0)
	if !lo.inf && lo.v > 0 {
		plo = lo.v
	}
	phi := bound{inf: true}
	if !hi.inf {
		phi = bound{v: hi.v - 1}
	}
	if r := natRangeWithZero(plo, phi); r != "" {
		alts = append(alts, r+frac)
	}
	// Negative -p.f lies in (-p-1, -p): p+1 ≤ -lo and -p ≤ hi.
	nlo := int64(0)
	if !hi.inf && hi.v < 0 {
		nlo = -hi.v
	}
	nhi := bound{inf: true}
	if !lo.inf {
		nhi = bound{v: -lo.v - 1}
	}
	if r := natRangeWithZero(nlo, nhi); r != "" {
		alts = append(alts, "-"+r+frac)
	}
	if len(alts) == 0 {
		return ""
	}
	return "(?:" + strings.Join(alts, "|") + ")"
}

// natRangeWithZero is natRange that also admits 0 when lo is 0.
func natRangeWithZero(lo int64, hi bound) string {
	if !hi.inf && hi.v < lo {
		return ""
	}
	if lo > 0 {
		return natRange(lo, hi)
	}
	if r := natRange(1, hi); r != "" {
		return "(?:0|" + r + ")"
	}
	return "0"
}

func parseNum(v *Value) float64 {
	f, _ := strconv.ParseFloat(v.Num, 64)
	return f
}
