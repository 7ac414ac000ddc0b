package skip

type s struct{}

func (s) A() {}
