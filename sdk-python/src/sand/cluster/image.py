"""The sandbox base image: imported into the engine from the root file system set-up built.

There is no image registry on this kind of machine, so set-up builds a
minimal Debian root file system with debootstrap (deploy/build-rootfs.sh) and
this module imports it once per engine.
"""

from __future__ import annotations

from pathlib import Path

import docker
import docker.errors
from sand.cluster.config import ClusterConfig


class ImageError(Exception):
    """The base image is neither in the engine nor importable; says why."""


def rootfs_tarball(config: ClusterConfig) -> Path:
    return config.home / "deploy" / "lib" / "sandbox" / "rootfs.tar"


def ensure_base_image(config: ClusterConfig) -> bool:
    """Import the base image unless the engine has it. Returns True if it imported.

    Blocks for the import (a few seconds). Raises ``ImageError``.
    """
    client = docker.DockerClient(base_url=config.docker_url, timeout=300)
    try:
        try:
            client.images.get(config.base_image)
            return False
        except docker.errors.ImageNotFound:
            pass
        tarball = rootfs_tarball(config)
        if not tarball.exists():
            raise ImageError(f"{tarball} does not exist; run `make setup` to build it")
        repository, _, tag = config.base_image.partition(":")
        client.api.import_image_from_file(str(tarball), repository=repository, tag=tag or "latest")
        client.images.get(config.base_image)
        return True
    except docker.errors.DockerException as exc:
        raise ImageError(f"importing {config.base_image} into {config.docker_url}: {exc}") from exc
    finally:
        client.close()
