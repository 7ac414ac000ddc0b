package big

// A method a test declares counts.
func (g *generic[K]) C() {}
