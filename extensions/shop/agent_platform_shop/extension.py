"""The shop extension: what it is and the config a mount must give."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.sdk import define_extension


class ShopConfig(BaseModel):
    """Mount config, e.g. ``mount("../../../shop_extension", config={"region": "eu"})``."""

    model_config = ConfigDict(extra="forbid")

    region: Literal["eu", "us"]
    currency: str = Field(default="EUR", pattern=r"^[A-Z]{3}$", description="ISO 4217 code")


extension = define_extension(
    name="shop",
    description="Parcel tracking, order cancellation and a FAQ for shop support agents.",
    config=ShopConfig,
)
