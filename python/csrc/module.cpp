// smelt._C: the extension module behind the `smelt` Python package.
// smelt::Error becomes smelt.SmeltError (a RuntimeError) with the same message.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "fusion/error.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "smelt's C++ core (private; use the smelt package)";
  pybind11::register_exception<smelt::Error>(m, "SmeltError", PyExc_RuntimeError);
  smelt::python::bindFusion(m);
  smelt::python::bindLowering(m);
  smelt::python::bindRuntime(m);
  smelt::python::bindTorchScript(m);
}
