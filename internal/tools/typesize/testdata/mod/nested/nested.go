package nested

type huge struct{}

func (huge) H0()  {}
func (huge) H1()  {}
func (huge) H2()  {}
func (huge) H3()  {}
func (huge) H4()  {}
func (huge) H5()  {}
func (huge) H6()  {}
func (huge) H7()  {}
func (huge) H8()  {}
func (huge) H9()  {}
func (huge) H10() {}
func (huge) H11() {}
func (huge) H12() {}
func (huge) H13() {}
func (huge) H14() {}
func (huge) H15() {}
func (huge) H16() {}
func (huge) H17() {}
func (huge) H18() {}
func (huge) H19() {}
func (huge) H20() {}
func (huge) H21() {}
func (huge) H22() {}
func (huge) H23() {}
func (huge) H24() {}
func (huge) H25() {}
func (huge) H26() {}
func (huge) H27() {}
func (huge) H28() {}
func (huge) H29() {}
func (huge) H30() {}
func (huge) H31() {}
func (huge) H32() {}
func (huge) H33() {}
func (huge) H34() {}
func (huge) H35() {}
func (huge) H36() {}
func (huge) H37() {}
func (huge) H38() {}
func (huge) H39() {}
