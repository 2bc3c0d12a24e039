package tokenizer

import "testing"

// BenchmarkEncode measures steady-state encode throughput (MB/s of UTF-8
// input) over all encodings.jsonl texts; bench/tokenizer/run.sh compares
// the same measurement against Hugging Face tokenizers (and the JS port).
func BenchmarkEncode(b *testing.B) {
	tok := loadQwen(b)
	cases := loadEncodings(b)
	n := 0
	for _, c := range cases {
		n += len(c.Text)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	for b.Loop() {
		for _, c := range cases {
			tok.Encode(c.Text)
		}
	}
}

// BenchmarkLoad measures loading the real Qwen3 tokenizer.json.
func BenchmarkLoad(b *testing.B) {
	dir := qwen3Dir(b)
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
