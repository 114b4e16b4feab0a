"""The model call's measure: results become seen, the input is counted from the ledger, and
reported usage calibrates an approximate counter within a plausible band."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from copaw_context.core.context.cache_reuse import PrefixReuse, observe_input
from copaw_context.core.context.step_context import FLOOR_BYTES_PER_TOKEN, StepContext
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.tokens import UsageCalibration
from copaw_context.core.toolresults.policy import UNSEEN

__all__ = ["InputMeasure", "InputMeter"]

logger = logging.getLogger("copaw_context")


@dataclass(frozen=True, slots=True)
class InputMeasure:
    """A model input as we count it: tokens and estimate bytes (bytes / 4 ~ AgentScope's
    estimate, the bound that makes a reported usage plausible or not)."""

    tokens: int
    nbytes: int
    reuse: PrefixReuse | None = None
    """Its common prefix with the previous input (the prompt-cache figure)."""


class InputMeter:
    """Before a model call, the measure; after it, what the provider's usage teaches."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    async def measure(self, host: HostSession) -> InputMeasure:
        """Results become seen (stage 2 may cut them from now on), and the input is measured
        (counts are reused; only new content is tokenised)."""
        ledger, _ = await self.ctx.sync(host)
        for index, part in sorted(ledger.unseen):
            view = host.view(index, part).parts[0]
            meta = {k: v for k, v in view.meta.items() if k != UNSEEN}
            host.set_tool_result(index, part, list(view.output), meta)
            ledger.update_meta(index, part, host.view(index, part).parts[0])
        report = await self.ctx.report(host)
        self.ctx.state(host).last_prompt_tokens = report.raw
        reuse = None
        try:
            fixed = await host.fixed_parts()
            reuse = observe_input(
                host,
                ledger,
                await self.ctx.meter(host),
                fixed,
                (report.tools, report.system, report.summary),
                report.raw,
            )
        except Exception:
            logger.exception("copaw-context: could not compare the input with the previous one")
        return InputMeasure(report.raw, report.floor * FLOOR_BYTES_PER_TOKEN, reuse)

    async def observe_usage(self, host: HostSession, measure: InputMeasure, reported: int) -> None:
        """Calibrate an approximate counter with the input tokens the provider reported.

        A report outside the plausible band around a bytes / 4 estimate is not a full prompt
        count (partial streaming usage, cached tokens reported apart, a proxy) and is ignored.
        """
        meter = await self.ctx.meter(host)
        if not self.ctx.calibrates(host, meter):
            return
        state = self.ctx.state(host)
        calibration = state.calibration
        byte_estimate = math.ceil(measure.nbytes / 4)
        if calibration.observe(measure.tokens, reported, byte_estimate=byte_estimate):
            state.calibration = calibration
        elif state.warn_once("implausible_usage"):
            logger.warning(
                "copaw-context: ignoring reported usage of %d input tokens for an input of about "
                "%d (UTF-8 bytes / 4): outside %.1fx-%.1fx, so not a full prompt count (partial "
                "streaming usage, cached tokens reported apart, or a proxy); calibration keeps "
                "x%.2f (logged once per agent)",
                reported,
                byte_estimate,
                UsageCalibration.PLAUSIBLE_LOW,
                UsageCalibration.PLAUSIBLE_HIGH,
                calibration.factor,
            )
