"""Well-formed summaries in English and Chinese, as a compactor should write them."""

from __future__ import annotations

__all__ = ["GOOD_EN", "GOOD_ZH"]


GOOD_EN = """## Goal
Fix the off-by-one in `count_items()` of /repo/src/app/main.py.

## Constraints & Preferences
- never touch prod.yaml

## Progress
### Done
- [x] Read /repo/src/app/main.py
### In Progress
- [ ] Patch `count_items()`
### Blocked
- (none)

## Key Decisions
- Keep the public signature: callers in ./docs/notes.md depend on it

## Next Steps
1. Run `pytest -q tests/test_main.py`

## Critical Context
- E   AssertionError: expected 3, got 4
"""


GOOD_ZH = """## 目标
修复 /repo/src/app/main.py 中 `count_items()` 的计数错误。

## 约束与偏好
- 不要修改 prod.yaml

## 进展
### 已完成
- [x] 读取了 /repo/src/app/main.py
### 进行中
- [ ] 修改 `count_items()`
### 受阻
- （无）

## 关键决策
- 保持函数签名不变

## 下一步
1. 运行 `pytest -q tests/test_main.py`

## 关键上下文
- E   AssertionError: expected 3, got 4
"""
