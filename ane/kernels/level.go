package kernels

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// simdDot adds the SDOT integer kernel to arm64's NEON level where the
// CPU has FEAT_DotProd (dot_arm64.go sets it); false everywhere else.
var simdDot bool

// simdVNNI adds, on amd64's AVX-512 level, the integer codebook kernels
// with VPERMW and VPDPWSSD (AVX512_VNNI, AVX512BW, AVX512VL; q4_amd64.s).
var simdVNNI bool

// KernelLevel names the kernel set products run with on this machine:
// "avx512-vnni", "avx512" or "avx2" on amd64, "neon-dotprod" or "neon" on
// arm64, or "go" (the pure-Go loops: other architectures and the purego
// build tag). status reports it for the reference engine.
func KernelLevel() string { return currentLevel().name }

// level is one kernel set: the switches the products read.
type level struct {
	name                         string
	simd, simd512, vnni, dotprod bool
	f16                          bool // the F16C (amd64) or NEON (arm64) half-precision kernels
}

// currentLevel is the set the switches select now.
func currentLevel() level {
	l := level{simd: simd, simd512: simd512, vnni: simdVNNI, dotprod: simdDot, f16: simdF16}
	switch {
	case simd512 && simdVNNI:
		l.name = "avx512-vnni"
	case simd512:
		l.name = "avx512"
	case simd && runtime.GOARCH == "arm64" && simdDot:
		l.name = "neon-dotprod"
	case simd && runtime.GOARCH == "arm64":
		l.name = "neon"
	case simd:
		l.name = "avx2"
	default:
		l.name = "go"
	}
	return l
}

func (l level) use() {
	simd, simd512, simdVNNI, simdDot, simdF16 = l.simd, l.simd512, l.vnni, l.dotprod, l.f16
}

// machineLevels lists the sets this machine can run, lowest first: each
// level up to the detected one, read before anything lowers it.
var machineLevels = sync.OnceValue(func() []level {
	top := currentLevel()
	ls := []level{{name: "go"}}
	add := func(l level) {
		l.simd, l.f16 = true, top.f16
		ls = append(ls, named(l))
	}
	switch {
	case !top.simd:
	case runtime.GOARCH == "arm64":
		add(level{})
		if top.dotprod {
			add(level{dotprod: true})
		}
	default:
		add(level{})
		if top.simd512 {
			add(level{simd512: true})
		}
		if top.vnni {
			add(level{simd512: true, vnni: true})
		}
	}
	return ls
})

// named is l with its name, as currentLevel names the switches.
func named(l level) level {
	prev := currentLevel()
	l.use()
	l = currentLevel()
	prev.use()
	return l
}

// Levels lists the kernel sets this machine can run, lowest ("go") first;
// the last is the one products use unless SetLevel chose another.
func Levels() []string {
	var names []string
	for _, l := range machineLevels() {
		names = append(names, l.name)
	}
	return names
}

// SetLevel makes products run with the named kernel set, one of Levels():
// for benchmarks that compare sets in one process, and to rule the SIMD
// kernels out when chasing a numerical difference. Call it before
// products run, not while they do.
func SetLevel(name string) error {
	for _, l := range machineLevels() {
		if l.name == name {
			l.use()
			return nil
		}
	}
	return fmt.Errorf("kernels: level %q is not available here (this machine has %s)", name, strings.Join(Levels(), ", "))
}
