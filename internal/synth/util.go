package synth

import (
	"cmp"
	"maps"
	"slices"
)

func sortedKeys(m map[int]bool) []int { return slices.Sorted(maps.Keys(m)) }

func sortedPairs(m map[pair]bool) []pair {
	return slices.SortedFunc(maps.Keys(m), func(x, y pair) int {
		return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b))
	})
}
