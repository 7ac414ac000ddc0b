package big_test

type large struct{}

func (large) X() {}
