# SPDX-License-Identifier: Apache-2.0
TEST_STAGES ?=
