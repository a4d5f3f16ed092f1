// Tests of bad input: the call must fail with latke::Error naming what was wrong.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "src/core/error.h"

namespace latke::test {

/// f() must fail with an Error whose message holds `what`; `accepted` names the bad input.
template <typename F>
void expect_error(F&& f, const std::string& what, const char* accepted) {
  try {
    f();
    ADD_FAILURE() << accepted << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace latke::test
