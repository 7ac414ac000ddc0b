package fingerprint

import (
	"strings"
	"testing"
)

func TestTemplate(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text stays", "connection refused", "connection refused"},
		{"numbers", "timeout after 5000 ms (attempt 3 of 10)", "timeout after <n> ms (attempt <n> of <n>)"},
		{"signed and decimal", "balance -42 below 12.50", "balance <n> below <n>.<n>"},
		{"ids with digits", "order ord_8f3k2 of customer C-1029 not found", "order <id> of customer <id> not found"},
		{"uuid", "tenant 3F2504E0-4F89-11D3-9A0C-0305E82C3301 unknown", "tenant <uuid> unknown"},
		{"hex literal", "bad pointer 0xdeadBEEF", "bad pointer <hex>"},
		{"hex run", "sha 9f86d081884c7d659a2feaa0c55ad015 mismatch", "sha <hex> mismatch"},
		{"double quoted", `invalid value "banana split" for field "qty"`, "invalid value <str> for field <str>"},
		{"escaped quote inside", `bad "a \"b\" c" here`, "bad <str> here"},
		{"backquoted", "unknown column `price_eur`", "unknown column <str>"},
		{"single quoted", "unexpected character 'x' at position 17", "unexpected character <str> at position <n>"},
		{"apostrophe is no quote", "can't parse, don't retry", "can't parse, don't retry"},
		{"rfc3339 timestamp", "deadline 2026-12-07T21:58:41.123Z passed", "deadline <ts> passed"},
		{"timestamp with offset and space", "at 2026-12-07 21:58:41+01:00 it failed", "at <ts> it failed"},
		{"date", "no rate for 2026-12-07", "no rate for <ts>"},
		{"url path ids", "GET https://api.example.com/v2/orders/8f3k2/items/17: 503", "GET https://api.example.com/<id>/orders/<id>/items/<id>: <n>"},
		{"url path without ids", "POST /orders/items failed", "POST /orders/items failed"},
		{"host and port", "dial tcp 10.0.0.7:5432: i/o timeout", "dial tcp <n>.<n>.<n>.<n>:<n>: i/o timeout"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Template(tc.in); got != tc.want {
				t.Errorf("Template(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// Messages that differ only in their variable parts have one template; messages of
// different causes keep different ones.
func TestTemplateGroupsByCause(t *testing.T) {
	same := [][]string{
		{"timeout calling payments for order 123 after 5001ms", "timeout calling payments for order 99817 after 30000ms"},
		{`unexpected token "}" at line 3 column 17`, `unexpected token "]" at line 120 column 2`},
		{"user 3f2504e0-4f89-11d3-9a0c-0305e82c3301 not found", "user 6ba7b810-9dad-11d1-80b4-00c04fd430c8 not found"},
	}
	for _, pair := range same {
		if a, b := Template(pair[0]), Template(pair[1]); a != b {
			t.Errorf("%q and %q: templates %q and %q differ", pair[0], pair[1], a, b)
		}
	}
	if a, b := Template("timeout calling payments"), Template("timeout calling inventory"); a == b {
		t.Errorf("different services share the template %q", a)
	}
}

// A message is attacker text: a huge one is cut before it is normalised, and what is
// stored is bounded and valid UTF-8.
func TestTemplateBoundsAttackerText(t *testing.T) {
	long := strings.Repeat("é", maxMessageBytes) // 2 bytes each: the cut falls inside a rune
	got := Template(long)
	if n := len([]rune(got)); n > maxTemplateRunes {
		t.Errorf("template has %d runes, want at most %d", n, maxTemplateRunes)
	}
	if !strings.HasPrefix(long, got) {
		t.Errorf("template of plain text is not its prefix")
	}
	if got := Template(strings.Repeat("a1 ", 100000)); len([]rune(got)) > maxTemplateRunes {
		t.Errorf("template has %d runes", len([]rune(got)))
	}
}

func TestOf(t *testing.T) {
	tmpl := Template("timeout after 5000 ms")
	fp := Of("TimeoutException", tmpl, "orders")
	if len(fp) != 2*Bytes {
		t.Fatalf("fingerprint %q has %d hex digits, want %d", fp, len(fp), 2*Bytes)
	}
	if fp != Of("TimeoutException", Template("timeout after 17 ms"), "orders") {
		t.Error("same class, template and topic: different fingerprints")
	}
	for _, other := range []string{
		Of("IOException", tmpl, "orders"),
		Of("TimeoutException", tmpl, "payments"),
		Of("TimeoutException", "timeout", "orders"),
		// The separator keeps the parts apart: moving text from one part to the next is
		// another fingerprint.
		Of("TimeoutExceptiontimeout after <n> ms", "", "orders"),
	} {
		if other == fp {
			t.Errorf("different failures share the fingerprint %s", fp)
		}
	}
}
