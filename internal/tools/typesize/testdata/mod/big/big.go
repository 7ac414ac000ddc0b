package big

// large has one method more than the limit, half on value receivers.
type large struct{ edge }

func (l *large) P0()  {}
func (l *large) P1()  {}
func (l *large) P2()  {}
func (l *large) P3()  {}
func (l *large) P4()  {}
func (l *large) P5()  {}
func (l *large) P6()  {}
func (l *large) P7()  {}
func (l *large) P8()  {}
func (l *large) P9()  {}
func (l *large) P10() {}
func (l *large) P11() {}
func (l *large) P12() {}
func (l *large) P13() {}
func (l *large) P14() {}
func (l *large) P15() {}
func (l large) V0()   {}
func (l large) V1()   {}
func (l large) V2()   {}
func (l large) V3()   {}
func (l large) V4()   {}
func (l large) V5()   {}
func (l large) V6()   {}
func (l large) V7()   {}
func (l large) V8()   {}
func (l large) V9()   {}
func (l large) V10()  {}
func (l large) V11()  {}
func (l large) V12()  {}
func (l large) V13()  {}
func (l large) V14()  {}

// edge has exactly the limit: it passes.
type edge struct{}

func (edge) E0()  {}
func (edge) E1()  {}
func (edge) E2()  {}
func (edge) E3()  {}
func (edge) E4()  {}
func (edge) E5()  {}
func (edge) E6()  {}
func (edge) E7()  {}
func (edge) E8()  {}
func (edge) E9()  {}
func (edge) E10() {}
func (edge) E11() {}
func (edge) E12() {}
func (edge) E13() {}
func (edge) E14() {}
func (edge) E15() {}
func (edge) E16() {}
func (edge) E17() {}
func (edge) E18() {}
func (edge) E19() {}
func (edge) E20() {}
func (edge) E21() {}
func (edge) E22() {}
func (edge) E23() {}
func (edge) E24() {}
func (edge) E25() {}
func (edge) E26() {}
func (edge) E27() {}
func (edge) E28() {}
func (edge) E29() {}

// generic declares two methods, through T[K] and *T[K].
type generic[K comparable] struct{ k K }

func (g generic[K]) A()  {}
func (g *generic[K]) B() {}
