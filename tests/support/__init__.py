"""What the tests share and run beside them: harnesses, fakes, fixtures' readers, helper processes."""
