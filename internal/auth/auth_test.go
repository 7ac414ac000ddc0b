package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	a, err := New([]Token{
		{Name: "v", SHA256: Hash("view-WftEZ0uYFAsVHTTJjc775JZM2SgInAi2"), Role: Viewer, Topics: []string{"orders"}},
		{Name: "o", SHA256: Hash("op-NdU49iNyicuCQ1HwsT6IFjS25pVYnzbm"), Role: Operator},
	})
	require.NoError(t, err)
	p, err := a.Authenticate("Bearer view-WftEZ0uYFAsVHTTJjc775JZM2SgInAi2")
	require.NoError(t, err)
	require.Equal(t, Principal{Name: "v", Role: Viewer, Topics: []string{"orders"}}, p)
	require.True(t, p.Sees("orders"))
	require.False(t, p.Sees("payments"))
	p, err = a.Authenticate("bearer op-NdU49iNyicuCQ1HwsT6IFjS25pVYnzbm")
	require.NoError(t, err)
	require.Equal(t, "o", p.Name)
	require.True(t, p.Sees("anything"))
	for _, h := range []string{"", "Bearer", "Bearer ", "Basic op-NdU49iNyicuCQ1HwsT6IFjS25pVYnzbm", "Bearer op-NdU49iNyicuCQ1HwsT6IFjS25pVYnzbm2", "op-NdU49iNyicuCQ1HwsT6IFjS25pVYnzbm"} {
		_, err := a.Authenticate(h)
		require.ErrorIs(t, err, ErrUnauthenticated, h)
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	require.True(t, Admin.Allows(Operator))
	require.True(t, Operator.Allows(Viewer))
	require.False(t, Viewer.Allows(Operator))
	require.False(t, Operator.Allows(Admin))
	require.False(t, Role("root").Valid())
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	h := Hash("x")
	for name, tc := range map[string]struct {
		tokens []Token
		want   string
	}{
		"no name":    {[]Token{{SHA256: h, Role: Admin}}, "name: required"},
		"dup name":   {[]Token{{Name: "a", SHA256: h, Role: Admin}, {Name: "a", SHA256: Hash("y"), Role: Admin}}, "used twice"},
		"bad hash":   {[]Token{{Name: "a", SHA256: "abc", Role: Admin}}, "64 hex"},
		"plain text": {[]Token{{Name: "a", SHA256: "secret-token", Role: Admin}}, "64 hex"},
		"dup token":  {[]Token{{Name: "a", SHA256: h, Role: Admin}, {Name: "b", SHA256: h, Role: Viewer}}, "twice"},
		"bad role":   {[]Token{{Name: "a", SHA256: h, Role: "root"}}, "role"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.tokens)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNewTokenIsRandom(t *testing.T) {
	t.Parallel()
	a, b := NewToken(), NewToken()
	require.NotEqual(t, a, b)
	require.Len(t, Hash(a), 64)
}

// A weak token is refused even when its hash is configured, and the well-known development
// tokens only where allowed (make dev).
func TestWeakAndDevTokens(t *testing.T) {
	t.Parallel()
	a, err := New([]Token{{Name: "weak", SHA256: Hash("tok-viewer"), Role: Viewer}})
	require.NoError(t, err)
	_, err = a.Authenticate("Bearer tok-viewer")
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.Error(t, CheckStrength("tok-viewer"))
	require.NoError(t, CheckStrength(NewToken()))

	dev := []Token{{Name: "dev-admin", SHA256: "1734d503f6aa6a047c36d113cbad769f719c93784b469b771c4c3e7c63adbefd", Role: Admin}}
	_, err = New(dev)
	require.ErrorContains(t, err, "development token")
	_, err = New(dev, AllowDevTokens(false))
	require.ErrorContains(t, err, "development token")
	a, err = New(dev, AllowDevTokens(true))
	require.NoError(t, err)
	p, err := a.Authenticate("Bearer dev-admin-token")
	require.NoError(t, err)
	require.Equal(t, "dev-admin", p.Name)
}

// API2 (broken authentication): a configured token of low entropy (repeated characters,
// runs, common words: under MinTokenBits by estimate) never authenticates, whatever its
// length; the refusal says how to make a good one. Random tokens pass, hex ones too.
func TestAbuseLowEntropyTokens(t *testing.T) {
	t.Parallel()
	weak := []string{"aaaaaaaaaaaaaaaaaaaa", "passwordpassword1234", "viewer-token-0123456789",
		"abcdefghijklmnopqrstuvwxyz", "0123456789abcdef0123456789abcdef", "correcthorsebatterystaple",
		"adminadminadminadminadminadmin", "Password123!Password123!"}
	for i, tok := range weak {
		a, err := New([]Token{{Name: "weak", SHA256: Hash(tok), Role: Viewer}})
		require.NoError(t, err)
		_, err = a.Authenticate("Bearer " + tok)
		require.ErrorIs(t, err, ErrUnauthenticated, "%d: %q", i, tok)
		err = CheckStrength(tok)
		require.Error(t, err, tok)
		require.Contains(t, err.Error(), "`dlq-admin token new`")
	}
	for range 100 {
		require.NoError(t, CheckStrength(NewToken()))
	}
	require.NoError(t, CheckStrength("d93481c4be1f32b271b55861d31675f491dffef565128d3cafc03a38d4c380c7"), "openssl rand -hex 32")
}

// Unmask is granted to admins unless configured otherwise, and never reaches past the
// token's topics.
func TestUnmaskPermission(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	a, err := New([]Token{
		{Name: "admin", SHA256: Hash("adm-WftEZ0uYFAsVHTTJjc775JZM2SgInAi2"), Role: Admin},
		{Name: "admin-masked", SHA256: Hash("adm-NdU49iNyicuCQ1HwsT6IFjS25pVYnzbm"), Role: Admin, Unmask: &no},
		{Name: "op", SHA256: Hash("op-Kq7s0b1WZ8yPpV3mTn4xRfLhGcUe2JdA"), Role: Operator},
		{Name: "viewer-orders", SHA256: Hash("view-Z2pXr8Lq0VnTb5MwYc7KsJ1HdGfE4uAo"), Role: Viewer, Topics: []string{"orders"}, Unmask: &yes},
	})
	require.NoError(t, err)
	for tok, want := range map[string][2]bool{ // [orders, payments]
		"adm-WftEZ0uYFAsVHTTJjc775JZM2SgInAi2":  {true, true},
		"adm-NdU49iNyicuCQ1HwsT6IFjS25pVYnzbm":  {false, false},
		"op-Kq7s0b1WZ8yPpV3mTn4xRfLhGcUe2JdA":   {false, false},
		"view-Z2pXr8Lq0VnTb5MwYc7KsJ1HdGfE4uAo": {true, false},
	} {
		p, err := a.Authenticate("Bearer " + tok)
		require.NoError(t, err)
		require.Equal(t, want, [2]bool{p.MayUnmask("orders"), p.MayUnmask("payments")}, p.Name)
	}
}
