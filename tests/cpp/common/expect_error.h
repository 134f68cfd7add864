// EXPECT_SMELT_ERROR(statement, "piece", ...): the statement throws
// smelt::Error and its message contains every piece.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fusion/error.h"

#define EXPECT_SMELT_ERROR(statement, ...)                                 \
  do {                                                                     \
    try {                                                                  \
      statement;                                                           \
      ADD_FAILURE() << "expected smelt::Error from " #statement;           \
    } catch (const ::smelt::Error& e) {                                    \
      for (const char* piece : {__VA_ARGS__}) {                            \
        EXPECT_NE(std::string(e.what()).find(piece), std::string::npos)    \
            << "message \"" << e.what() << "\" lacks \"" << piece << "\""; \
      }                                                                    \
    }                                                                      \
  } while (false)
